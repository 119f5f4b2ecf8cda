"""Test-side Block Kit checker: slack_sdk's own validation plus the limits it does not enforce.

Deliberately independent of `bot.slack.limits` so the tests do not grade the code with its own
ruler. Every block is re-parsed with `slack_sdk.models.blocks.Block.parse(...).to_dict()` (which
runs slack_sdk's validators; an unknown type parses to None and fails) and views go through
`View(**view).to_dict()`. On top of that: block counts per surface, unique block_ids, unique
action_ids per block, option text/value/description lengths, ≤10 checkbox/radio options,
plain_text_input lengths, multi-select `max_selected_items`, number, email and URL inputs only
in modals (a number input's bounds as strings), non-empty text objects, the message's aggregate
text and a modal's size budget. Every length is counted here in UTF-16
code units (an emoji counts 2), the unit that is safe whatever Slack counts in.
"""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

BLOCK_LIMIT = {"message": 50, "modal": 100, "home": 100}
AGGREGATE_TEXT_LIMIT = 12_000
VIEW_TEXT_LIMIT = 10_000
VIEW_JSON_LIMIT = 24 * 1024
TOP_LEVEL_TEXT_LIMIT = 4000
MODAL_ONLY = ("number_input", "email_text_input", "url_text_input")  # Slack's element reference: modals only


def units(text: Any) -> int:
    """UTF-16 code units of `text`: what each Slack length limit is held to here."""
    return len(str(text).encode("utf-16-le")) // 2


def _text(obj: Any) -> str:
    return str(obj.get("text", "")) if isinstance(obj, dict) else ""


def _field_errors(path: str, block: dict[str, Any]) -> list[str]:
    """A block's own text fields over Slack's documented limits."""
    fields: list[tuple[str, str, int]] = []
    kind = block.get("type")
    if kind == "header":
        fields.append(("text", _text(block.get("text")), 150))
    elif kind == "section":
        fields.append(("text", _text(block.get("text")), 3000))
        fields += [(f"fields[{n}]", _text(f), 2000) for n, f in enumerate(block.get("fields") or [])]
    elif kind == "context":
        fields += [(f"elements[{n}]", _text(e), 3000) for n, e in enumerate(block.get("elements") or [])]
    elif kind == "input":
        fields += [("label", _text(block.get("label")), 2000), ("hint", _text(block.get("hint")), 2000)]
    for el in _elements(block):
        fields.append((f"{el.get('type')} placeholder", _text(el.get("placeholder")), 150))
        if el.get("type") == "button":
            fields.append(("button text", _text(el.get("text")), 75))
    return [f"{path} {name}: {units(t)} units (limit {limit})" for name, t, limit in fields if units(t) > limit]


def _elements(block: dict[str, Any]) -> list[dict[str, Any]]:
    if block.get("type") == "input":
        return [block.get("element") or {}]
    if block.get("type") == "actions":
        return list(block.get("elements") or [])
    if block.get("type") == "section" and block.get("accessory"):
        return [block["accessory"]]
    return []


def _all_options(element: dict[str, Any]) -> list[dict[str, Any]]:
    found = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        found += list(group.get("options") or [])
    if element.get("initial_option"):
        found.append(element["initial_option"])
    found += list(element.get("initial_options") or [])
    return found


def text_objects(node: Any) -> list[dict[str, Any]]:
    """Every plain_text / mrkdwn object under `node`."""
    found: list[dict[str, Any]] = []
    if isinstance(node, list):
        for child in node:
            found += text_objects(child)
    elif isinstance(node, dict):
        if node.get("type") in ("plain_text", "mrkdwn") and "text" in node:
            found.append(node)
        for child in node.values():
            if isinstance(child, dict | list):
                found += text_objects(child)
    return found


def _element_errors(path: str, el: dict[str, Any]) -> list[str]:
    errors = []
    kind = el.get("type")
    for opt in _all_options(el):
        if units((opt.get("text") or {}).get("text", "")) > 75:
            errors.append(f"{path}/{kind}: option text over 75")
        if units(opt.get("value", "")) > 150:
            errors.append(f"{path}/{kind}: option value over 150")
        if units((opt.get("description") or {}).get("text", "")) > 75:
            errors.append(f"{path}/{kind}: option description over 75")
    if kind in ("checkboxes", "radio_buttons") and len(el.get("options") or []) > 10:
        errors.append(f"{path}/{kind}: more than 10 options")
    if kind == "plain_text_input":
        if el.get("max_length") is not None and not 1 <= el["max_length"] <= 3000:
            errors.append(f"{path}: max_length outside 1..3000")
        if el.get("min_length") is not None and not 0 <= el["min_length"] <= 3000:
            errors.append(f"{path}: min_length outside 0..3000")
    if str(kind).startswith("multi_") and el.get("max_selected_items") is not None and el["max_selected_items"] < 1:
        errors.append(f"{path}: max_selected_items below 1")
    return errors


def _number_input_errors(path: str, el: dict[str, Any]) -> list[str]:
    """Slack's number_input: `is_decimal_allowed` is required; bounds and the initial value are strings."""
    errors = (
        [] if isinstance(el.get("is_decimal_allowed"), bool) else [f"{path}: number_input without is_decimal_allowed"]
    )
    for key in ("min_value", "max_value", "initial_value"):
        if key in el and not isinstance(el[key], str):
            errors.append(f"{path}: number_input {key} must be a string")
    return errors


def block_errors(blocks: list[dict[str, Any]], surface: str = "message") -> list[str]:
    """Every problem with `blocks` on `surface`; empty when Slack should accept them."""
    errors: list[str] = []
    if not 1 <= len(blocks) <= BLOCK_LIMIT[surface]:
        errors.append(f"{surface}: {len(blocks)} blocks (limit {BLOCK_LIMIT[surface]})")
    seen: set[str] = set()
    for i, block in enumerate(blocks):
        path = f"blocks[{i}]({block.get('type')})"
        parsed = Block.parse(block)
        if parsed is None or type(parsed) is Block:
            errors.append(f"{path}: slack_sdk does not know this block type")
        else:
            try:
                parsed.to_dict()
            except SlackObjectFormationError as exc:
                errors.append(f"{path}: {exc}")
        block_id = block.get("block_id")
        if block_id is not None:
            if block_id in seen:
                errors.append(f"{path}: duplicate block_id {block_id!r}")
            seen.add(block_id)
        errors += _field_errors(path, block)
        elements = _elements(block)
        action_ids = [e["action_id"] for e in elements if e.get("action_id")]
        if len(action_ids) != len(set(action_ids)):
            errors.append(f"{path}: duplicate action_id in one block")
        for el in elements:
            errors += _element_errors(path, el)
            if surface != "modal" and el.get("type") in MODAL_ONLY:
                errors.append(f"{path}: {el['type']} is allowed only in modals, not in a {surface}")
            if el.get("type") == "number_input":
                errors += _number_input_errors(path, el)
    for obj in text_objects(blocks):
        if not str(obj["text"]).strip():
            errors.append(f"empty {obj['type']} text object")
    if surface == "message":
        total = sum(units(o["text"]) for o in text_objects(blocks))
        if total > AGGREGATE_TEXT_LIMIT:
            errors.append(f"message: {total} units of block text (limit {AGGREGATE_TEXT_LIMIT})")
    return errors


def assert_valid_message(blocks: list[dict[str, Any]], text: str | None = "fallback") -> None:
    """Fail the test unless `blocks` (and the top-level `text`, when checked) are postable."""
    errors = block_errors(blocks, "message")
    if text is not None and not text.strip():
        errors.append("message: top-level text fallback is empty")
    if text is not None and units(text) > TOP_LEVEL_TEXT_LIMIT:
        errors.append(f"message: top-level text over {TOP_LEVEL_TEXT_LIMIT} units")
    assert not errors, "\n".join(errors)


def assert_valid_view(view: dict[str, Any]) -> None:
    """Fail the test unless `view` is a valid modal or Home tab."""
    errors = []
    try:
        View(**view).to_dict()
    except SlackObjectFormationError as exc:
        errors.append(f"view: {exc}")
    errors += block_errors(list(view.get("blocks") or []), view["type"])
    errors += [f"view {k}: over 24 units" for k in ("title", "submit", "close") if units(_text(view.get(k))) > 24]
    if view["type"] == "modal":
        errors += view_budget_errors(view)
    assert not errors, "\n".join(errors)


def view_budget_errors(view: dict[str, Any]) -> list[str]:
    """A modal's block text over 10,000 units, or its JSON (UTF-8) over 24 KB."""
    text = sum(units(o["text"]) for o in text_objects(view.get("blocks") or []))
    size = len(json.dumps(view, ensure_ascii=False).encode())
    errors = [f"modal: {text} units of block text (limit {VIEW_TEXT_LIMIT})"] if text > VIEW_TEXT_LIMIT else []
    return errors + ([f"modal: {size} bytes of JSON (limit {VIEW_JSON_LIMIT})"] if size > VIEW_JSON_LIMIT else [])
