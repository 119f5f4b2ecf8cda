"""Every Slack length counted in UTF-16 code units, and a modal's size budget (no I/O).

A character outside the Basic Multilingual Plane, such as 🚀, is one code point but two UTF-16
code units. Counting in units is safe whichever Slack counts, so the API, the builders' cuts and
`bot.slack.limits` all count so; `blockcheck` holds every payload to Slack's limits in units.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from blockcheck import assert_valid_message, assert_valid_view, units, view_budget_errors
from pydantic import ValidationError

from bot.slack import blocks, limits, mrkdwn
from bot.slack.blocks_context import superseded_blocks
from workers.interaction import Answer, Request
from workers.interaction.lengths import utf16_len, utf16_prefix
from workers.questions.models import QuestionCreate

pytestmark = pytest.mark.unit

R = "🚀"
OPTION_FIELDS = ("label", "description", "value")
IID = "Zx9_k-3mQpL2vR7tY1uW0aBcDeFgHiJkLmNoPqRsTuV"


def rockets(units_: int) -> str:
    """🚀 repeated to fill `units_` UTF-16 code units (a last plain character when `units_` is odd)."""
    return R * (units_ // 2) + "x" * (units_ % 2)


def _options(n: int, tag: str) -> list[dict[str, str]]:
    return [
        {"value": f"{tag}{k}" + rockets(150 - len(f"{tag}{k}")), "label": f"{k}" + rockets(75 - len(str(k))),
         "description": rockets(75)}
        for k in range(n)
    ]  # fmt: skip


def emoji_request(reason: str) -> Request:
    """Every text field 🚀 up to the API's limit in UTF-16 code units."""
    kinds = ["select", "multi_select", "free_text", "date", "select", "multi_select", "free_text", "date"]
    items: list[dict[str, Any]] = []
    for n, kind in enumerate([*kinds, "select", "free_text"]):
        item: dict[str, Any] = {"id": f"i{n}", "text": f"{n}" + rockets(1999), "type": kind}
        if kind in ("select", "multi_select"):
            item["options"] = _options(100 if n < 2 else 10, f"i{n}-")
        if kind == "free_text":
            item["placeholder"] = rockets(150)
            item["default"] = rockets(3000) if n == 2 else None
        if kind == "multi_select":
            item["default"] = [o["value"] for o in item["options"][:3]]
        items.append(item)
    return QuestionCreate.model_validate(
        {"request": {"reason": reason, "items": items}, "channel": "C0GENERAL"}
    ).request


def emoji_answers(request: Request) -> list[Answer]:
    out = []
    for item in request.items:
        if item.is_choice:
            values = item.option_values()
            out.append(Answer.for_item(item, values[-1] if item.type.value == "select" else values))
        elif item.type.value == "free_text":
            out.append(Answer(id=item.id, free_text=rockets(3000)))
        else:
            out.append(Answer(id=item.id, date="2026-02-03"))
    return out


@pytest.mark.parametrize(
    "reason",
    [rockets(150), rockets(152), rockets(3000), utf16_prefix((R + "&<@U1>\n") * 500, 3000)],
    ids=["header", "over-a-header", "longest", "escapes"],
)
def test_an_emoji_heavy_question_breaks_no_limit_in_utf16_units(reason: str) -> None:
    request = emoji_request(reason)
    question = blocks.question_blocks(request, IID, assignees=["U0BOB"])
    assert_valid_message(question, blocks.fallback_text(request))  # each field and the fallback text, in units
    assert_valid_view(blocks.modal_view(request, IID))
    answered = blocks.answered_blocks(request, emoji_answers(request), answered_by="U0BOB", answered_at=0)
    assert_valid_message(answered, blocks.locked_text(request, "Answered by <@U0BOB>"))
    assert_valid_message(blocks.closed_blocks(request, status="expired", detail=rockets(3000)))
    assert_valid_message(superseded_blocks(request, [], answered_by="U0BOB"))
    for text in (blocks.run_started_text("U0BOB", rockets(200), rockets(8000)), blocks.final_text(rockets(8000))):
        assert units(text) <= 4000
    assert_valid_message(blocks.failed_blocks(rockets(8000), "r1", True))


def test_a_header_is_kept_to_150_units() -> None:
    at_limit = blocks.question_blocks(emoji_request(rockets(150)), IID, assignees=["U0BOB"])[0]
    assert at_limit["type"] == "header" and units(at_limit["text"]["text"]) == 150
    over = blocks.question_blocks(emoji_request(rockets(152)), IID, assignees=["U0BOB"])[0]
    assert over["type"] == "section"  # 76 emoji: 76 characters, but 152 units


def _question(field: str, text: str) -> dict[str, Any]:
    """A one-select question body whose `field` (reason, item or option field) holds `text`."""
    option = {"value": "v", "label": "Label", **({field: text} if field in OPTION_FIELDS else {})}
    item = {"id": "i", "text": "Pick", "type": "select", "options": [option]}
    item.update({field: text} if field in ("text", "placeholder") else {})
    return {"request": {"reason": text if field == "reason" else "Why", "items": [item]}, "channel": "C0GENERAL"}


@pytest.mark.parametrize(
    ("field", "limit", "loc"),
    [
        ("reason", 3000, ["request", "reason"]),
        ("text", 2000, ["request", "items", 0, "text"]),
        ("placeholder", 150, ["request", "items", 0, "placeholder"]),
        ("label", 75, ["request", "items", 0, "options", 0, "label"]),
        ("description", 75, ["request", "items", 0, "options", 0, "description"]),
        ("value", 150, ["request", "items", 0, "options", 0, "value"]),
    ],
)
def test_the_api_refuses_text_over_a_limit_in_utf16_units_naming_the_field(field: str, limit: int, loc: list) -> None:
    over = R * (limit // 2 + 1)  # within the limit counted in characters, over it counted in UTF-16 units
    assert len(over) <= limit < utf16_len(over)
    with pytest.raises(ValidationError) as caught:
        QuestionCreate.model_validate(_question(field, over))
    [error] = caught.value.errors()
    assert error["loc"] == tuple(loc) and "UTF-16" in error["msg"]
    QuestionCreate.model_validate(_question(field, rockets(limit)))  # exactly at the limit: accepted


def test_limits_refuse_an_option_label_of_75_rockets() -> None:
    def select(label: str) -> list[dict[str, Any]]:
        option = {"text": {"type": "plain_text", "text": label}, "value": "v"}
        element = {"type": "static_select", "action_id": "answer", "options": [option]}
        return [{"type": "input", "label": {"type": "plain_text", "text": "Pick"}, "element": element}]

    with pytest.raises(limits.BlockLimitError, match="option 0 text over 75 UTF-16 code units: 150"):
        limits.check_message_blocks(select(R * 75))
    limits.check_message_blocks(select(R * 37 + "x"))  # 75 units


@pytest.mark.parametrize("n", range(1, 60))
def test_cuts_count_units_and_never_split_an_emoji_an_entity_or_a_mention(n: int) -> None:
    text = f"{R}a&b <@U0BOB> {R}{R} <!date^1760000000^{{time}}|12:00> &lt;x&gt;" * 3
    for cut in (mrkdwn.cut_escaped(text, n), mrkdwn.clip(f"{R}<&>" * 20, n), mrkdwn.truncate(R * 50, n)):
        assert utf16_len(cut) <= n
        assert not re.search(r"&[a-z]{0,3}…$", cut), cut
        assert cut.count("<") == cut.count(">") or "<@" not in cut, cut
        assert "\ud83d" not in cut and "\ude80" not in cut
    if n >= 40:  # room for the longest token, a date
        chunks = mrkdwn.split_escaped(text, n)
        assert all(utf16_len(c) <= n for c in chunks), chunks
        assert "".join(chunks) == text
        for chunk in chunks:  # every mention whole, in one chunk
            assert all(">" in rest for rest in chunk.split("<")[1:]), chunk


def test_utf16_prefix_ends_on_a_whole_character() -> None:
    assert utf16_prefix(R * 3, 5) == R * 2 and utf16_prefix(R * 3, 6) == R * 3 and utf16_prefix("ab", 0) == ""
    assert utf16_len(R + "é") == 3


def _modal(blocks_: list[dict[str, Any]], kind: str = "modal") -> dict[str, Any]:
    return {"type": kind, "title": {"type": "plain_text", "text": "Answer"}, "blocks": blocks_}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def test_check_view_keeps_a_modal_within_10000_characters_and_24_kb() -> None:
    wordy = _modal([_section("w" * 2500) for _ in range(5)])  # 12,500 characters of text
    with pytest.raises(limits.BlockLimitError, match="12500 characters of text"):
        limits.check_view(wordy)
    options = [{"text": {"type": "plain_text", "text": f"{k}"}, "value": f"{k:03d}" + "v" * 140} for k in range(100)]
    select = {"type": "static_select", "action_id": "a", "options": options}
    heavy = _modal([{"type": "input", "label": {"type": "plain_text", "text": "L"}, "element": select}] * 1)
    assert limits.text_length(heavy["blocks"]) < 10_000 and len(json.dumps(heavy)) > 15_000
    big = _modal([{**heavy["blocks"][0], "block_id": f"b{n}"} for n in range(2)])
    with pytest.raises(limits.BlockLimitError, match="bytes of JSON"):
        limits.check_view(big)
    assert view_budget_errors(big) and view_budget_errors(wordy)  # the test-side checker agrees
    limits.check_view({**wordy, "type": "home"})  # a Home tab pages its runs instead
