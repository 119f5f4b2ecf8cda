"""Block Kit limits slack_sdk does not enforce, checked before a message or view is sent.

slack_sdk validates each block it builds, but never sees the message as a whole. And it stores
some fields raw. A `static_select` built from dicts keeps its options unchecked. Slack answers
those mistakes with an opaque `invalid_blocks` or `msg_blocks_too_long`. That comes after the
run has already paused. So Parley checks them here and fails loudly instead:

- At most 50 blocks per message, 100 per modal or Home tab.
- `block_id`s unique within the surface, and `action_id`s unique within a block.
- Option text ≤75, value ≤150, description ≤75 in every select, checkbox and radio group.
- A header's text ≤150, a section's ≤3,000, an input's label and hint ≤2,000. A placeholder
  ≤150, a button's text ≤75. A modal's title, submit and close ≤24.
- At most 10 options in checkboxes and radio buttons.
- `plain_text_input.max_length` within 1..3000, and `min_length` within 0..3000.
- `max_selected_items` ≥1 on multi-selects.
- A message's block text adds up to at most 12,000 characters. Slack's undocumented
  `msg_blocks_too_long` threshold sits a little above that.
- A modal's block text adds up to at most 10,000 characters, and its JSON as sent to 24 KB.
  Slack documents no size limit for views. But large ones fail with no API error, while the
  person sees "We had some trouble connecting". See slackapi/deno-slack-sdk#324,
  slack-go/slack#1196 and slackapi/slack-cli#144. A Home tab pages its runs instead.

Every length is counted in UTF-16 code units (`workers.interaction.lengths`, re-exported here).
An emoji counts 2. So what fits here fits whichever unit Slack counts in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from workers.exceptions import ParleyError
from workers.interaction.lengths import (
    HEADER_MAX,
    LABEL_MAX,
    OPTION_DESCRIPTION_MAX,
    OPTION_TEXT_MAX,
    OPTION_VALUE_MAX,
    PLACEHOLDER_MAX,
    SECTION_MAX,
    TEXT_INPUT_MAX,
    UNIT,
    utf16_len,
)
from workers.interaction.lengths import (
    utf16_prefix as utf16_prefix,  # re-exported: the builders cut with it
)

MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_MESSAGE_TEXT = 12_000
MAX_VIEW_TEXT = 10_000
"""The block text a modal keeps within (the form, Inspect): the same headroom a question message keeps."""
MAX_VIEW_JSON = 24 * 1024
"""Bytes of a modal's JSON in UTF-8 (`view_json_size`)."""
BUTTON_TEXT_MAX = 75
HINT_MAX = 2000
SECTION_FIELD_MAX = 2000
VIEW_TITLE_MAX = 24
MAX_CHOICE_BUTTON_OPTIONS = 10
DATETIME_PICKER_MAX = 9_999_999_999
"""The latest `initial_date_time` a datetimepicker takes (2286-11-20T17:46:39Z), the earliest being 0.

Slack's reference asks for a Unix timestamp of 10 digits; slack_sdk refuses one outside 0..this."""

_SURFACE_LIMITS = {"message": MAX_MESSAGE_BLOCKS, "modal": MAX_VIEW_BLOCKS, "home": MAX_VIEW_BLOCKS}


class BlockLimitError(ParleyError, ValueError):
    """Blocks that Slack would refuse.

    `.problems` lists every violation found.
    """

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
    text = obj.get("text", "") if isinstance(obj, dict) else ""
    return text if isinstance(text, str) else ""


def _over(where: str, text: str, limit: int) -> Iterator[str]:
    if (size := utf16_len(text)) > limit:
        yield f"{where} over {limit} {UNIT}: {size}"


def _element_problems(path: str, element: dict[str, Any]) -> Iterator[str]:
    kind = element.get("type", "?")
    for n, opt in enumerate(_options(element)):
        where = f"{path}/{kind} option {n}"
        yield from _over(f"{where} text", _text_of(opt.get("text")), OPTION_TEXT_MAX)
        yield from _over(f"{where} value", str(opt.get("value", "")), OPTION_VALUE_MAX)
        yield from _over(f"{where} description", _text_of(opt.get("description")), OPTION_DESCRIPTION_MAX)
    yield from _over(f"{path}/{kind} placeholder", _text_of(element.get("placeholder")), PLACEHOLDER_MAX)
    if kind == "button":
        yield from _over(f"{path}/button text", _text_of(element.get("text")), BUTTON_TEXT_MAX)
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


def _block_text_problems(path: str, block: dict[str, Any]) -> Iterator[str]:
    """The block's own text fields over their limits.

    Those are header, section, context, input label and hint.
    """
    kind = block.get("type")
    if kind == "header":
        yield from _over(f"{path} text", _text_of(block.get("text")), HEADER_MAX)
    elif kind == "section":
        yield from _over(f"{path} text", _text_of(block.get("text")), SECTION_MAX)
        for n, field in enumerate(block.get("fields") or []):
            yield from _over(f"{path} fields[{n}]", _text_of(field), SECTION_FIELD_MAX)
    elif kind == "context":
        for n, element in enumerate(block.get("elements") or []):
            yield from _over(f"{path} elements[{n}]", _text_of(element), SECTION_MAX)
    elif kind == "input":
        yield from _over(f"{path} label", _text_of(block.get("label")), LABEL_MAX)
        yield from _over(f"{path} hint", _text_of(block.get("hint")), HINT_MAX)


def text_length(node: Any) -> int:
    """The UTF-16 code units of every text object's `text` under `node`.

    That is what Slack's aggregate limit counts.
    """
    if isinstance(node, list):
        return sum(text_length(n) for n in node)
    if not isinstance(node, dict):
        return 0
    total = 0
    if node.get("type") in ("plain_text", "mrkdwn") and isinstance(node.get("text"), str):
        total += utf16_len(node["text"])
    for value in node.values():
        if isinstance(value, dict | list):
            total += text_length(value)
    return total


def block_problems(blocks: list[dict[str, Any]], *, surface: str = "message") -> list[str]:
    """Every limit `blocks` break on `surface`, empty when fine.

    `surface` is "message", "modal" or "home".
    """
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
        problems.extend(_block_text_problems(path, block))
        elements = _elements(block)
        action_ids = [e.get("action_id") for e in elements if e.get("action_id")]
        if len(action_ids) != len(set(action_ids)):
            problems.append(f"{path}: duplicate action_id within one block")
        for element in elements:
            problems.extend(_element_problems(path, element))
    if surface == "message":
        total = text_length(blocks)
        if total > MAX_MESSAGE_TEXT:
            problems.append(f"message: {total} characters of text ({UNIT}), over the {MAX_MESSAGE_TEXT} Slack accepts")
    return problems


def check_message_blocks(blocks: list[dict[str, Any]], *, surface: str = "message") -> None:
    """Raise `BlockLimitError` naming each limit `blocks` break.

    Pass `surface="modal"` or "home" for views.
    """
    problems = block_problems(blocks, surface=surface)
    if problems:
        raise BlockLimitError(problems)


def view_json_size(view: dict[str, Any]) -> int:
    """The UTF-8 bytes of `view`'s JSON, spaced as slack_sdk's `json.dumps` does.

    That is what Slack decodes. slack_sdk also escapes each character outside ASCII. An emoji
    becomes 12 bytes of `\\u` escapes. That is the wire's size, not the view's.
    """
    return len(json.dumps(view, ensure_ascii=False).encode())


def view_problems(view: dict[str, Any]) -> list[str]:
    """Every limit `view` breaks, empty when fine.

    That covers its blocks and title, and for a modal the size budget.
    """
    kind = str(view.get("type"))
    problems = block_problems(list(view.get("blocks") or []), surface=kind)
    for key in ("title", "submit", "close"):
        problems.extend(_over(f"{kind} {key}", _text_of(view.get(key)), VIEW_TITLE_MAX))
    if kind == "modal":
        text, size = text_length(view.get("blocks") or []), view_json_size(view)
        if text > MAX_VIEW_TEXT:
            problems.append(f"modal: {text} characters of text ({UNIT}), over the {MAX_VIEW_TEXT} a modal keeps within")
        if size > MAX_VIEW_JSON:
            problems.append(f"modal: {size} bytes of JSON, over the {MAX_VIEW_JSON} a modal keeps within")
    return problems


def within_view_budget(view: dict[str, Any]) -> bool:
    """Whether a modal's block text and JSON fit the budget builders shrink views to."""
    return text_length(view.get("blocks") or []) <= MAX_VIEW_TEXT and view_json_size(view) <= MAX_VIEW_JSON


def check_view(view: dict[str, Any]) -> None:
    """Raise `BlockLimitError` naming each limit a modal or Home tab view breaks.

    The modal budget is included.
    """
    problems = view_problems(view)
    if problems:
        raise BlockLimitError(problems)
