"""Items whose element Slack cannot pre-fill as asked: refused by name, or given an element that can.

A date-and-time picker takes a Unix timestamp from 0 to 9,999,999,999 (10 digits), so a default
outside 1970..2286 cannot be shown: the question is refused naming the item, before anything is
posted. A one-line text input drops line breaks (as a browser's does), so a free-text default
with one is shown in a multi-line input, and submitting it unchanged gives back the default.
"""

from __future__ import annotations

from typing import Any

import pytest
from blockcheck import assert_valid_message, assert_valid_view
from slack_forms import form_state

from bot.slack.blocks_question import modal_view, question_blocks
from bot.slack.form_state import parse_state_values
from bot.slack.limits import BlockLimitError
from workers.interaction import Item, Request

pytestmark = pytest.mark.unit

IID = "Zx9_k-3mQpL2vR7tY1uW0a"


def _datetime(default: str) -> Request:
    return Request(reason="When?", items=[Item(id="start", text="Start", type="datetime", default=default)])


@pytest.mark.parametrize("default", ["1969-12-31T23:59:59Z", "1900-01-01T00:00:00Z", "2286-11-20T17:46:40Z"])
def test_a_datetime_default_the_picker_cannot_show_is_refused_naming_the_item(default: str) -> None:
    request = _datetime(default)
    for build in (lambda: question_blocks(request, IID, assignees=["U1"]), lambda: modal_view(request, IID)):
        with pytest.raises(BlockLimitError) as caught:
            build()
        assert caught.value.problems == [
            f"item 'start': its default {default} is outside what Slack's date-and-time picker shows, "
            "1970-01-01T00:00:00Z to 2286-11-20T17:46:39Z"
        ]


@pytest.mark.parametrize("default", ["1970-01-01T00:00:00Z", "2286-11-20T17:46:39Z"])
def test_a_datetime_default_at_the_pickers_ends_is_shown(default: str) -> None:
    request = _datetime(default)
    assert_valid_message(question_blocks(request, IID, assignees=["U1"]))
    assert_valid_view(modal_view(request, IID))


def _one_line_input_as_submitted(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """`state.values` of the inputs left as pre-filled, where a one-line input has lost its line breaks."""
    state = form_state(blocks, {})
    for block in blocks:
        element = block.get("element") or {}
        if element.get("type") == "plain_text_input" and not element.get("multiline"):
            value = state[block["block_id"]]["answer"]
            if isinstance(value.get("value"), str):
                value["value"] = value["value"].replace("\r", "").replace("\n", "")
    return state


@pytest.mark.parametrize("note", ["line one\nline two", "one\r\ntwo", "ends with a break\n"])
def test_a_free_text_default_with_a_line_break_is_submitted_back_unchanged(note: str) -> None:
    request = Request(
        reason="Release notes",
        items=[
            Item(id="notes", text="Notes", type="free_text", default=note),
            Item(id="title", text="Title", type="free_text", default="one line"),
        ],
    )
    blocks = question_blocks(request, IID, assignees=["U1"])
    view = modal_view(request, IID)
    assert_valid_message(blocks)
    assert_valid_view(view)
    for shown, prefix in ((blocks, "q"), (view["blocks"], "f")):
        elements = {b["block_id"].split("|")[-1]: b["element"] for b in shown if b["type"] == "input"}
        assert elements["notes"].get("multiline") is True and not elements["title"].get("multiline")
        answers = parse_state_values(request, IID, _one_line_input_as_submitted(shown), prefix=prefix)
        assert {a.id: a.value for a in request.validate_answers(answers)} == {"notes": note, "title": "one line"}
