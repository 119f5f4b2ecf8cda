"""Test-side Block Kit checker: slack_sdk's own validation plus the limits it does not enforce.

Deliberately independent of `bot.slack.limits` so the tests do not grade the code with its own
ruler. Every block is re-parsed with `slack_sdk.models.blocks.Block.parse(...).to_dict()` (which
runs slack_sdk's validators; an unknown type parses to None and fails) and views go through
`View(**view).to_dict()`. On top of that: block counts per surface, unique block_ids, unique
action_ids per block, option text/value/description lengths, ≤10 checkbox/radio options,
plain_text_input lengths, multi-select `max_selected_items`, non-empty text objects and the
message's aggregate text.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

BLOCK_LIMIT = {"message": 50, "modal": 100, "home": 100}
AGGREGATE_TEXT_LIMIT = 12_000


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
        if len((opt.get("text") or {}).get("text", "")) > 75:
            errors.append(f"{path}/{kind}: option text over 75")
        if len(opt.get("value", "")) > 150:
            errors.append(f"{path}/{kind}: option value over 150")
        if len((opt.get("description") or {}).get("text", "")) > 75:
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
        elements = _elements(block)
        action_ids = [e["action_id"] for e in elements if e.get("action_id")]
        if len(action_ids) != len(set(action_ids)):
            errors.append(f"{path}: duplicate action_id in one block")
        for el in elements:
            errors += _element_errors(path, el)
    for obj in text_objects(blocks):
        if not str(obj["text"]).strip():
            errors.append(f"empty {obj['type']} text object")
    if surface == "message":
        total = sum(len(o["text"]) for o in text_objects(blocks))
        if total > AGGREGATE_TEXT_LIMIT:
            errors.append(f"message: {total} characters of block text (limit {AGGREGATE_TEXT_LIMIT})")
    return errors


def assert_valid_message(blocks: list[dict[str, Any]], text: str | None = "fallback") -> None:
    """Fail the test unless `blocks` (and the top-level `text`, when checked) are postable."""
    errors = block_errors(blocks, "message")
    if text is not None and not text.strip():
        errors.append("message: top-level text fallback is empty")
    if text is not None and len(text) > 4000:
        errors.append("message: top-level text over 4000 characters")
    assert not errors, "\n".join(errors)


def assert_valid_view(view: dict[str, Any]) -> None:
    """Fail the test unless `view` is a valid modal or Home tab."""
    errors = []
    try:
        View(**view).to_dict()
    except SlackObjectFormationError as exc:
        errors.append(f"view: {exc}")
    errors += block_errors(list(view.get("blocks") or []), view["type"])
    assert not errors, "\n".join(errors)
