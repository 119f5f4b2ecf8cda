"""The terminal host, in-process: its controls and its loop, with no Redis and no processes.

Keystrokes reach each control through a pipe input; the host's loop is driven by a
scripted prompter. `parley run` itself is tested in `test_terminal_inline` (its inline
execution, on the test Redis) and `test_terminal_command` (the real command in a pty).
"""

from __future__ import annotations

import io

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.output.plain_text import PlainTextOutput
from terminal_support import CLEAR, DOWN, FINISH, UP, ScriptedPrompter

from bot.terminal import TerminalHost, TerminalPrompter, parse_choices
from parley.identity import os_user
from workers.agents.ticket import details_request
from workers.interaction import AnswerValue, ChoiceError, Item, ItemType, Request
from workers.interaction.context import changes
from workers.interaction.tools import request_from_tool_call

pytestmark = pytest.mark.unit

TICKET = {i.id: i for i in details_request("Create ticket for login issue").items}


def answer(item: Item, keys: str) -> AnswerValue:
    """What `item`'s control returns after `keys`; the input then ends, so a stuck control raises EOFError."""
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        pipe.close()
        with create_app_session(input=pipe, output=DummyOutput()):
            return TerminalPrompter().ask(item)


# ---- the controls, in-process ------------------------------------------------------
def test_select_starts_on_the_default_and_moves_with_the_arrow_keys() -> None:
    assert answer(TICKET["affected"], "\r") == "All users"
    assert answer(TICKET["affected"], DOWN + DOWN + "\r") == "One customer"
    assert answer(TICKET["affected"], UP + "\r") == "Internal only"  # wraps around


@pytest.mark.parametrize(
    ("typed", "value"), [("2", "sev2"), ("high", "sev2"), ("med", "sev3"), ("the last one", "sev4")]
)
def test_select_takes_a_typed_reply(typed: str, value: str) -> None:
    assert answer(TICKET["severity"], typed + "\r") == value


def test_select_refuses_a_reply_that_names_no_option_until_it_is_fixed() -> None:
    assert answer(TICKET["severity"], "9\r" + CLEAR + "low\r") == "sev4"
    with pytest.raises(EOFError):  # nothing accepted "9"
        answer(TICKET["severity"], "9\r")


def test_arrow_keys_replace_a_half_typed_reply() -> None:
    assert answer(TICKET["severity"], "zz" + DOWN + "\r") == "sev2"


def test_an_optional_select_can_be_skipped() -> None:
    item = Item(id="env", text="Environment", type=ItemType.SELECT, options=["prod", "staging"], required=False)
    assert answer(item, "\r") is None
    assert answer(item, UP + UP + "\r") == "prod"
    assert answer(item, "staging\r") == "staging"


def test_multi_select_ticks_with_space_and_confirms_with_enter() -> None:
    assert answer(TICKET["components"], " " + DOWN + DOWN + " \r") == ["Login", "Web app"]
    assert answer(TICKET["components"], " " + " " + DOWN + " \r") == ["API"]  # ticking twice unticks


def test_multi_select_takes_typed_numbers_and_names() -> None:
    assert answer(TICKET["components"], "web app, 2\r") == ["API", "Web app"]
    assert answer(TICKET["components"], "1 6\r") == ["Login", "Notifications"]


def test_multi_select_refuses_none_when_required() -> None:
    assert answer(TICKET["components"], "\r" + " \r") == ["Login"]
    with pytest.raises(EOFError):
        answer(TICKET["components"], "\r")
    optional = TICKET["components"].model_copy(update={"required": False})
    assert answer(optional, "\r") == []


def test_multi_select_starts_with_its_defaults_ticked() -> None:
    item = Item(id="c", text="C", type=ItemType.MULTI_SELECT, options=["a", "b", "c"], default=["b"])
    assert answer(item, "\r") == ["b"]
    assert answer(item, " \r") == ["a", "b"]


def test_parse_choices() -> None:
    item = TICKET["components"]
    assert parse_choices(item, "api; login") == ["Login", "API"]
    assert parse_choices(item, "3,3") == ["Web app"]
    with pytest.raises(ChoiceError, match="not one of the options"):
        parse_choices(item, "api, nothing like it")


def test_free_text_multiline_needs_esc_enter_and_an_answer() -> None:
    assert answer(TICKET["description"], "first\rsecond" + FINISH) == "first\nsecond"
    assert answer(TICKET["description"], FINISH + "now" + FINISH) == "now"
    with pytest.raises(EOFError):
        answer(TICKET["description"], "   " + FINISH)


def test_free_text_is_prefilled_with_its_default_and_checked_against_its_limit() -> None:
    item = Item(id="t", text="Title", type=ItemType.FREE_TEXT, default="Login fails", max_length=15)
    assert answer(item, "\r") == "Login fails"
    assert answer(item, " on Safari\r" + "\x08" * 7 + "\r") == "Login fails on"


def test_date_is_checked_and_may_be_skipped_when_optional() -> None:
    assert answer(TICKET["due"], "2026-13-45\r" + CLEAR + "2026-12-01\r") == "2026-12-01"
    assert answer(TICKET["due"], "\r") is None
    required = Item(id="d", text="When", type=ItemType.DATE, default="2026-01-31")
    assert answer(required, "\r") == "2026-01-31"


# ---- the host's loop --------------------------------------------------------------
class FakeRun:
    run_id = "r-test"
    started_by = "tester"
    conversation = {"host": "terminal"}
    interrupt_id = "q-test"
    question_context = None
    context_changes: list[object] = []


def test_the_host_asks_again_only_the_items_validation_refused() -> None:
    request = Request(
        reason="Details?",
        items=[
            Item(id="title", text="Title", type=ItemType.FREE_TEXT, max_length=5),
            Item(id="size", text="Size", type=ItemType.SELECT, options=["S", "M"]),
        ],
    )
    prompter = ScriptedPrompter({"title": ["far too long", "short"], "size": ["M"]})
    outcome = TerminalHost(prompter).solicit(request, FakeRun())
    assert not outcome.paused
    assert {a.id: a.value for a in outcome.answers} == {"title": "short", "size": "M"}
    assert prompter.asked == ["title", "size", "title"]
    assert prompter.problems == [("title", "text is 12 characters, over the limit of 5")]


def test_a_required_choice_may_be_skipped_for_its_other_text_but_not_both() -> None:
    request = request_from_tool_call(
        {"questions": [{"id": "plan", "header": "Plan", "question": "Which?", "type": "single",
                        "options": [{"label": "Canary"}, {"label": "Full"}]}]}
    )  # fmt: skip
    prompter = ScriptedPrompter({"plan": [None, None], "plan__other": [None, "Blue-green"]})
    outcome = TerminalHost(prompter).solicit(request, FakeRun())
    assert {a.id: a.value for a in outcome.answers} == {"plan__other": "Blue-green"}
    assert prompter.asked == ["plan", "plan__other", "plan", "plan__other"]
    assert prompter.problems == [
        ("plan", "an answer is required: choose one, or fill in “Other (type your own answer)”")
    ]


def test_quitting_pauses_the_run_on_its_question() -> None:
    request = Request(reason="Details?", items=[TICKET["due"]])
    for quit_with in (KeyboardInterrupt(), EOFError()):
        host = TerminalHost(ScriptedPrompter({"due": [quit_with]}))
        assert host.solicit(request, FakeRun()).paused  # the runtime parks it, open, as any host's
        assert host.stopped == {"r-test"}


def test_the_terminal_user_is_a_valid_user_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "DOMAIN\\jane doe")
    assert os_user() == "DOMAIN_jane_doe"


def test_the_host_shows_the_facts_and_what_changed_since_a_void_answer() -> None:
    class AskedAgain(FakeRun):
        question_context = {"service": "api", "version": "v1.4.3"}
        context_changes = changes({"service": "api", "version": "v1.4.2"}, question_context)

    shown = io.StringIO()
    request = Request(reason="Approve?", items=[Item(id="ok", text="OK?", type=ItemType.SELECT, options=["yes", "no"])])
    with create_app_session(output=PlainTextOutput(shown)):
        outcome = TerminalHost(ScriptedPrompter({"ok": ["yes"]})).solicit(request, AskedAgain())
    assert [a.value for a in outcome.answers] == ["yes"]
    assert [line for line in shown.getvalue().replace("\r\n", "\n").splitlines() if line.strip()] == [
        "Approve?",
        "The facts changed since the last answer, so it no longer applies:",
        "  version: v1.4.2 → v1.4.3",
        "You are deciding on:",
        "  service: api",
        "  version: v1.4.3",
    ]
