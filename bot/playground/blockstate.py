"""Block Kit as Slack hands it back: filled-in ids, ``state.values`` and the clicked ``actions[]`` entry.

The playground page sends raw control values: an option value, a list of them, typed text, a
date. This module turns them into the exact shapes Slack puts in payloads. Those are
``block_actions``, ``view_submission`` and ``block_suggestion`` payloads:

    static_select / radio_buttons / external_select   selected_option  (option object or null)
    multi_static_select / checkboxes / multi_external  selected_options (list, may be [])
    plain_text_input, number_input, email_text_input,  value            (str, "\\n" kept, or null)
    url_text_input
    datepicker / timepicker                            selected_date / selected_time (or null)
    datetimepicker                                     selected_date_time (a Unix timestamp, int, or null)
    users_select                                       selected_user    (a user id, or null)

Options are echoed as
``{"text": {"type": "plain_text", "text": ..., "emoji": true}, "value": ...}``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bot.playground.plain_copy import plain_copy

SINGLE = frozenset({"static_select", "radio_buttons", "external_select"})
MULTI = frozenset({"multi_static_select", "checkboxes", "multi_external_select"})
EXTERNAL = frozenset({"external_select", "multi_external_select"})
TEXT_INPUTS = frozenset({"plain_text_input", "number_input", "email_text_input", "url_text_input"})
VALUE_FIELD = {
    **dict.fromkeys(TEXT_INPUTS, "value"),
    "datetimepicker": "selected_date_time",
    "datepicker": "selected_date",
    "timepicker": "selected_time",
    "users_select": "selected_user",
}
STATEFUL = SINGLE | MULTI | frozenset(VALUE_FIELD)
Inputs = dict[str, dict[str, Any]]


def _short_hash(data: Any) -> str:
    return hashlib.sha1(json.dumps(data, sort_keys=True).encode()).hexdigest()[:5]


def with_ids(blocks: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """A copy of ``blocks`` with the ``block_id``/``action_id`` Slack assigns when left out.

    It is deterministic, so the page and later payloads agree on the ids.
    """
    out = plain_copy(blocks or [])
    for n, block in enumerate(out):
        if not isinstance(block, dict):
            continue
        block.setdefault("block_id", f"{_short_hash([n, block])}")
        for m, element in enumerate(_elements(block)):
            element.setdefault("action_id", f"{_short_hash([n, m, element])}")
    return out


def _elements(block: dict[str, Any]) -> list[dict[str, Any]]:
    found = [block[k] for k in ("element", "accessory") if isinstance(block.get(k), dict)]
    if block.get("type") in ("actions", "context_actions"):
        found += [e for e in block.get("elements") or [] if isinstance(e, dict)]
    if block.get("type") == "card":  # a card's buttons are its `actions`
        found += [e for e in block.get("actions") or [] if isinstance(e, dict)]
    return found


def find_element(blocks: list[dict[str, Any]], block_id: str, action_id: str) -> dict[str, Any] | None:
    """The element ``action_id`` inside block ``block_id``, or ``None``."""
    for block in blocks:
        if block.get("block_id") == block_id:
            return next((e for e in _elements(block) if e.get("action_id") == action_id), None)
    return None


def option_object(option: dict[str, Any], *, keep_description: bool = False) -> dict[str, Any]:
    """An option as Slack echoes it: plain_text with ``emoji: true``, value, maybe description."""
    text = option.get("text")
    label = text.get("text", "") if isinstance(text, dict) else str(text or "")
    out: dict[str, Any] = {"text": {"type": "plain_text", "text": label, "emoji": True}, "value": option.get("value")}
    if keep_description and isinstance(option.get("description"), dict):
        out["description"] = {**option["description"], "emoji": True}
    return out


def _options(element: dict[str, Any]) -> list[dict[str, Any]]:
    flat = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        flat += group.get("options") or []
    return [o for o in flat if isinstance(o, dict)]


def _pick(element: dict[str, Any], raw: Any) -> dict[str, Any] | None:
    """One option from a raw value.

    That is a value string for static menus, an option object for external ones.
    """
    if raw is None or raw == "":
        return None
    keep = element.get("type") == "radio_buttons"
    if element.get("type") in EXTERNAL:
        return option_object(raw) if isinstance(raw, dict) and "value" in raw else None
    match = next((o for o in _options(element) if o.get("value") == raw), None)
    return option_object(match, keep_description=keep) if match else None


def _initial(element: dict[str, Any]) -> Any:
    """The raw value an untouched element holds: its initial option(s), value or date."""
    kind = element.get("type")
    if kind in SINGLE:
        opt = element.get("initial_option")
        return (opt if kind in EXTERNAL else opt.get("value")) if isinstance(opt, dict) else None
    if kind in MULTI:
        opts = [o for o in element.get("initial_options") or [] if isinstance(o, dict)]
        return opts if kind in EXTERNAL else [o.get("value") for o in opts]
    if kind in TEXT_INPUTS:
        return element.get("initial_value")
    if kind == "datetimepicker":
        return element.get("initial_date_time")
    if kind == "datepicker":
        return element.get("initial_date")
    if kind == "timepicker":
        return element.get("initial_time")
    if kind == "users_select":
        return element.get("initial_user")
    return None


def element_state(element: dict[str, Any], raw: Any) -> dict[str, Any] | None:
    """``{"type": ..., <value field>: ...}`` for one element holding ``raw``.

    None for stateless elements.
    """
    kind = element.get("type")
    if kind not in STATEFUL:
        return None
    if kind in SINGLE:
        return {"type": kind, "selected_option": _pick(element, raw)}
    if kind in MULTI:
        picked = [_pick(element, r) for r in (raw if isinstance(raw, list) else [])]
        return {"type": kind, "selected_options": [p for p in picked if p is not None]}
    if kind == "datetimepicker":  # Slack sends the moment picked as a Unix timestamp
        stamp = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
        return {"type": kind, "selected_date_time": stamp}
    value = raw if isinstance(raw, str) and raw != "" else None
    return {"type": kind, VALUE_FIELD[kind]: value}


def state_values(blocks: list[dict[str, Any]], inputs: Inputs | None) -> dict[str, dict[str, Any]]:
    """``state.values`` for every stateful element of ``blocks``.

    Each holds what the person entered, else the initial value.
    """
    inputs = inputs or {}
    values: dict[str, dict[str, Any]] = {}
    for block in blocks:
        block_id = block.get("block_id")
        if block.get("type") not in ("input", "actions", "section") or not block_id:
            continue
        for element in _elements(block):
            action_id = element.get("action_id", "")
            given = inputs.get(block_id, {})
            raw = given[action_id] if action_id in given else _initial(element)
            state = element_state(element, raw)
            if state is not None:
                values.setdefault(block_id, {})[action_id] = state
    return values


def action_entry(element: dict[str, Any], block_id: str, raw: Any, action_ts: str) -> dict[str, Any]:
    """The ``actions[]`` item for the element a person used.

    It has its ids, type, own value fields and ``action_ts``.
    """
    kind = element.get("type")
    entry: dict[str, Any] = {"action_id": element.get("action_id"), "block_id": block_id}
    if kind in ("button", "overflow"):
        text = element.get("text")
        if isinstance(text, dict):
            entry["text"] = {"type": "plain_text", "text": text.get("text", ""), "emoji": True}
        if kind == "overflow":
            entry["selected_option"] = _pick({**element, "type": "static_select"}, raw)
        elif "value" in element:
            entry["value"] = element["value"]
        if element.get("style"):
            entry["style"] = element["style"]
    elif kind == "feedback_buttons":  # the clicked button's value and text (bolt-js `FeedbackButtonsAction`)
        button = next(
            (
                b
                for b in (element.get("positive_button"), element.get("negative_button"))
                if b and b.get("value") == raw
            ),
            None,
        )
        if button is None:
            raise LookupError(f"no feedback button with the value {raw!r}")
        entry.update(value=button["value"], text={**button["text"], "emoji": True})
    else:
        entry.update({k: v for k, v in (element_state(element, raw) or {}).items() if k != "type"})
        if isinstance(element.get("placeholder"), dict):
            entry["placeholder"] = {**element["placeholder"], "emoji": True}
    entry.update(type=kind, action_ts=action_ts)
    return entry
