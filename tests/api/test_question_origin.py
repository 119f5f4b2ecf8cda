"""A question asked through the API or MCP opens with who asked it, so text the caller wrote cannot
pass for a line of Parley's own: the posted message, its locked state and its refreshes, checked
against the Web API stand-in with Slack's own Block Kit validation (`blockcheck`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from blockcheck import assert_valid_message
from inprocess_bot import Bot, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element, form_state, texts, users_select_action, users_select_state
from slack_payloads import block_actions_payload

from bot.slack.blocks_question import DECLINE_ACTION_ID, REASSIGN_ACTION_ID, asked_by_line, question_blocks
from bot.slack.mrkdwn import fold_blank_lines
from workers.interaction import Item, ItemType, Request
from workers.questions import Caller, QuestionService
from workers.questions.models import ELICITATION, QuestionCreate

pytestmark = pytest.mark.integration

CHANNEL = "C0GENERAL"
FORGED = "Ship the release?\n\n\n\n\u200b\n   \n*Alice Admin* (CEO)\n> Approved, go ahead.\n\n\n"


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as b:
        yield b


def forged_request() -> Request:
    return Request(reason=FORGED, items=[Item(id="d", text="Go?", type=ItemType.SELECT, options=["yes", "no"])])


def context_text(block: dict[str, Any]) -> str:
    assert block["type"] == "context", block
    return str(block["elements"][0]["text"])


def ask(bot: Bot, caller: Caller) -> dict[str, Any]:
    """Ask the forged question as `caller`; the message the stand-in holds for it."""
    view, _ = QuestionService(bot.runtime).create(caller, QuestionCreate(request=forged_request(), channel=CHANNEL))
    message = bot.ws.message(CHANNEL, str(view.message_ts))
    assert message is not None
    return message


@pytest.mark.parametrize(
    ("caller", "line"),
    [
        (Caller("ci-bot"), "Asked by *ci-bot* through the API"),
        (Caller("desk-assistant", via="mcp"), "Asked by *desk-assistant* through MCP"),
    ],
)
def test_the_message_opens_with_who_asked_above_the_callers_text(bot: Bot, caller: Caller, line: str) -> None:
    message = ask(bot, caller)
    blocks = message["blocks"]
    assert_valid_message(blocks, message["text"])
    assert context_text(blocks[0]) == line
    reason = next(b for b in blocks[1:] if b["type"] == "section")
    # The caller's text sits below, escaped, with its blank lines folded into one.
    assert reason["text"]["text"] == "Ship the release?\n\n*Alice Admin* (CEO)\n&gt; Approved, go ahead."
    assert "\n\n\n" not in json.dumps(message)


def test_the_locked_message_still_says_who_asked(bot: Bot) -> None:
    message = ask(bot, Caller("ci-bot"))
    block, button = find_element(message["blocks"], lambda a: a.startswith("parley_choose"))
    payload = block_actions_payload(
        user="U0CAROL", message=message, channel=CHANNEL, action=button_action(block, button)
    )
    assert bot.interact(payload).status == 200
    work(bot.runtime)
    locked = bot.wait_for(
        "the question to be locked",
        lambda: (m := bot.ws.message(CHANNEL, message["ts"])) and "Answered by" in json.dumps(m) and m,
    )
    assert_valid_message(locked["blocks"], locked["text"])
    assert context_text(locked["blocks"][0]) == "Asked by *ci-bot* through the API"
    assert "\n\n\n" not in locked["blocks"][1]["text"]["text"]


def test_an_origin_name_cannot_carry_markup(bot: Bot) -> None:
    message = ask(bot, Caller("ops* <!channel> _x_\n\n*Alice*", via="mcp"))
    line = context_text(message["blocks"][0])
    assert line == "Asked by *ops\u2217 &lt;!channel&gt; _x_ \u2217Alice\u2217* through MCP"
    assert_valid_message(message["blocks"], message["text"])


def test_a_question_asked_again_reuses_its_blocks_only_for_the_same_origin(bot: Bot) -> None:
    first, second = ask(bot, Caller("ci-bot")), ask(bot, Caller("deploy-bot"))
    assert context_text(first["blocks"][0]) == "Asked by *ci-bot* through the API"
    assert context_text(second["blocks"][0]) == "Asked by *deploy-bot* through the API"


def test_a_reassigned_mcp_question_keeps_its_origin_line_and_its_decline_button(bot: Bot) -> None:
    request = forged_request().model_copy(update={"assignees": ["U0CAROL"]})
    create = QuestionCreate(request=request, channel=CHANNEL, metadata={ELICITATION: "form"})
    view, _ = QuestionService(bot.runtime).create(Caller("desk-assistant", via="mcp"), create)
    message = bot.ws.message(CHANNEL, str(view.message_ts))
    assert message is not None and find_element(message["blocks"], DECLINE_ACTION_ID)
    block, select = find_element(message["blocks"], REASSIGN_ACTION_ID)
    payload = block_actions_payload(
        user="U0CAROL",
        message=message,
        channel=CHANNEL,
        action=users_select_action(block, select, "U0BOB"),
        state_values={**form_state(message["blocks"], {}), **users_select_state(block, select, "U0BOB")},
    )
    assert bot.interact(payload).status == 200
    moved = bot.wait_for(
        "the question to show the reassignment",
        lambda: (m := bot.ws.message(CHANNEL, message["ts"])) and "reassigned this to" in texts(m["blocks"]) and m,
    )
    assert_valid_message(moved["blocks"], moved["text"])
    assert context_text(moved["blocks"][0]) == "Asked by *desk-assistant* through MCP"
    assert find_element(moved["blocks"], DECLINE_ACTION_ID)


# ---- the builders on their own -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("a\n\n\nb", "a\n\nb"),
        ("a\n \t\n\u200b\n\u00a0\nb\n\n\nc", "a\n\nb\n\nc"),
        ("\n\n\na\nb\n\n", "a\nb"),
        ("one line", "one line"),
    ],
)
def test_runs_of_blank_lines_fold_into_one(text: str, folded: str) -> None:
    assert fold_blank_lines(text) == folded


def test_item_texts_fold_their_blank_lines_too() -> None:
    many = Request(
        reason="Two things",
        items=[
            Item(id="a", text="First\n\n\n\nline", type=ItemType.FREE_TEXT),
            Item(id="b", text="Pick\n\n\n> one", type=ItemType.SELECT, options=["x", "y"]),
        ],
    )
    blocks = question_blocks(many, "q1", assignees=["U0BOB"])
    labels = [b["label"]["text"] for b in blocks if b["type"] == "input"]
    assert labels == ["First\n\nline", "Pick\n\n> one"]
    assert not any("hint" in b for b in blocks if b["type"] == "input")  # folding is not shortening
    one = Request(
        reason="One", items=[Item(id="c", text="Go?\n\n\n\n*Alice*", type=ItemType.SELECT, options=["y", "n"])]
    )
    [text] = [b["text"]["text"] for b in question_blocks(one, "q2", assignees=[]) if b.get("block_id") == "qt|q2|1"]
    assert text == "Go?\n\n*Alice*"


def test_a_question_without_an_origin_has_no_origin_line() -> None:
    plain = question_blocks(forged_request(), "q1", assignees=["U0BOB"])
    assert not any(b.get("block_id", "").startswith("qo|") for b in plain)
    asked = question_blocks(forged_request(), "q1", assignees=["U0BOB"], asked_by=asked_by_line("ci-bot"))
    assert asked[0]["block_id"] == "qo|q1|1" and asked[1:] == plain
    assert_valid_message(asked)
