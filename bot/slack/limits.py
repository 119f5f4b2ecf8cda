"""Block Kit limits slack_sdk does not enforce, checked before a message or view is sent.

slack_sdk validates each block it builds, but it never sees the message as a whole and it
stores some fields raw (a `static_select` built from dicts keeps its options unchecked).
Slack answers those mistakes with an opaque `invalid_blocks` or `msg_blocks_too_long`, after
the run has already paused, so Parley checks them here and fails loudly instead:

- at most 50 blocks per message, 100 per modal or Home tab;
- `block_id`s unique within the surface, `action_id`s unique within a block;
- option text ≤75, value ≤150, description ≤75 in every select, checkbox and radio group;
- at most 10 options in checkboxes and radio buttons;
- `plain_text_input.max_length` within 1..3000 and `min_length` within 0..3000;
- `max_selected_items` ≥1 on multi-selects;
- the text of a message's blocks adds up to at most 12,000 characters (Slack's undocumented
  `msg_blocks_too_long` threshold sits a little above that).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workers.exceptions import ParleyError

MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_MESSAGE_TEXT = 12_000
OPTION_TEXT_MAX = 75
OPTION_VALUE_MAX = 150
OPTION_DESCRIPTION_MAX = 75
MAX_CHOICE_BUTTON_OPTIONS = 10
TEXT_INPUT_MAX = 3000

_SURFACE_LIMITS = {"message": MAX_MESSAGE_BLOCKS, "modal": MAX_VIEW_BLOCKS, "home": MAX_VIEW_BLOCKS}


class BlockLimitError(ParleyError, ValueError):
    """Blocks that Slack would refuse; `.problems` lists every violation found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("Block Kit limits exceeded: " + "; ".join(self.problems))


def _elements(block: dict[str, Any]) -> list[dict[str, Any]]:
    kind = block.get("type")
    if kind == "input":
        return [block.get("element") or {}]
    if kind == "actions":
        return list(block.get("elements") or [])
    if kind == "section" and block.get("accessory"):
        return [block["accessory"]]
    return []


def _options(element: dict[str, Any]) -> list[dict[str, Any]]:
    opts = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        opts.extend(group.get("options") or [])
    for key in ("initial_option",):
        if isinstance(element.get(key), dict):
            opts.append(element[key])
    opts.extend(element.get("initial_options") or [])
    return opts


def _text_of(obj: Any) -> str:
    return obj.get("text", "") if isinstance(obj, dict) else ""


def _element_problems(path: str, element: dict[str, Any]) -> Iterator[str]:
    kind = element.get("type", "?")
    for n, opt in enumerate(_options(element)):
        where = f"{path}/{kind} option {n}"
        if len(_text_of(opt.get("text"))) > OPTION_TEXT_MAX:
            yield f"{where}: text over {OPTION_TEXT_MAX} characters"
        if len(str(opt.get("value", ""))) > OPTION_VALUE_MAX:
            yield f"{where}: value over {OPTION_VALUE_MAX} characters"
        if len(_text_of(opt.get("description"))) > OPTION_DESCRIPTION_MAX:
            yield f"{where}: description over {OPTION_DESCRIPTION_MAX} characters"
    if kind in ("checkboxes", "radio_buttons") and len(element.get("options") or []) > MAX_CHOICE_BUTTON_OPTIONS:
        yield f"{path}/{kind}: more than {MAX_CHOICE_BUTTON_OPTIONS} options"
    if kind == "plain_text_input":
        most, least = element.get("max_length"), element.get("min_length")
        if most is not None and not 1 <= most <= TEXT_INPUT_MAX:
            yield f"{path}: plain_text_input max_length {most} is outside 1..{TEXT_INPUT_MAX}"
        if least is not None and not 0 <= least <= TEXT_INPUT_MAX:
            yield f"{path}: plain_text_input min_length {least} is outside 0..{TEXT_INPUT_MAX}"
    most_selected = element.get("max_selected_items")
    if kind.startswith("multi_") and most_selected is not None and most_selected < 1:
        yield f"{path}/{kind}: max_selected_items must be at least 1"


def text_length(node: Any) -> int:
    """The characters in every text object's `text` under `node` (what Slack's aggregate limit counts)."""
    if isinstance(node, list):
        return sum(text_length(n) for n in node)
    if not isinstance(node, dict):
        return 0
    total = 0
    if node.get("type") in ("plain_text", "mrkdwn") and isinstance(node.get("text"), str):
        total += len(node["text"])
    for value in node.values():
        if isinstance(value, dict | list):
            total += text_length(value)
    return total


def block_problems(blocks: list[dict[str, Any]], *, surface: str = "message") -> list[str]:
    """Every limit `blocks` break on `surface` ("message", "modal" or "home"); empty when fine."""
    if surface not in _SURFACE_LIMITS:
        raise ValueError(f"unknown surface {surface!r}")
    if not isinstance(blocks, list):
        return [f"{surface}: blocks must be a list"]
    problems: list[str] = []
    limit = _SURFACE_LIMITS[surface]
    if not 1 <= len(blocks) <= limit:
        problems.append(f"{surface}: {len(blocks)} blocks, the limit is 1..{limit}")
    seen: set[str] = set()
    for i, block in enumerate(blocks):
        path = f"blocks[{i}]({block.get('type')})"
        block_id = block.get("block_id")
        if block_id is not None:
            if block_id in seen:
                problems.append(f"{path}: duplicate block_id {block_id!r}")
            seen.add(block_id)
        elements = _elements(block)
        action_ids = [e.get("action_id") for e in elements if e.get("action_id")]
        if len(action_ids) != len(set(action_ids)):
            problems.append(f"{path}: duplicate action_id within one block")
        for element in elements:
            problems.extend(_element_problems(path, element))
    if surface == "message":
        total = text_length(blocks)
        if total > MAX_MESSAGE_TEXT:
            problems.append(f"message: {total} characters of text, over the {MAX_MESSAGE_TEXT} Slack accepts")
    return problems


def check_message_blocks(blocks: list[dict[str, Any]], *, surface: str = "message") -> None:
    """Raise `BlockLimitError` naming each limit `blocks` break; pass `surface="modal"`/"home" for views."""
    problems = block_problems(blocks, surface=surface)
    if problems:
        raise BlockLimitError(problems)


def check_view(view: dict[str, Any]) -> None:
    """`check_message_blocks` for a modal or Home tab view dict."""
    check_message_blocks(list(view.get("blocks") or []), surface=str(view.get("type")))
