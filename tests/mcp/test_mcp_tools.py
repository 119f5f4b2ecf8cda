"""The MCP tools' contract, without a server: `ask_human`'s schema is `ask_user`'s plus where to
ask, who answers and how long to wait; arguments become a question or one error listing
every problem; results are `waiting` with an id or the closed question's answers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from bot.body_limits import MCP_BODY_MAX
from bot.mcp.rebinding import default_hosts, transport_security
from bot.mcp.tools import (
    ASK_HUMAN_SCHEMA,
    GET_ANSWER_SCHEMA,
    ToolInputError,
    parse_ask_human,
    parse_get_answer,
    tool_result,
)
from workers.interaction import CONTEXT_MAX
from workers.interaction.tools import ASK_USER_SCHEMA, HEADER_MAX, LABEL_MAX, MAX_QUESTIONS, QUESTION_MAX
from workers.questions.models import QuestionStatus, QuestionView

pytestmark = pytest.mark.unit

QUESTION = {"id": "sev", "header": "Severity", "question": "How bad is it?", "type": "single",
            "options": [{"label": "Low"}, {"label": "High"}]}  # fmt: skip


def args(**extra: Any) -> dict[str, Any]:
    return {"questions": [QUESTION], **extra}


def problems(arguments: Any) -> str:
    with pytest.raises(ToolInputError) as caught:
        parse_ask_human(arguments)
    return str(caught.value)


def test_ask_human_schema_extends_ask_user_and_is_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(ASK_HUMAN_SCHEMA)
    jsonschema.Draft202012Validator.check_schema(GET_ANSWER_SCHEMA)
    for name, prop in ASK_USER_SCHEMA["properties"].items():
        assert ASK_HUMAN_SCHEMA["properties"][name] == prop
    assert set(ASK_HUMAN_SCHEMA["properties"]) - set(ASK_USER_SCHEMA["properties"]) == {
        "channel", "user", "assignees", "title", "wait_seconds", "requested_schema", "message"
    }  # fmt: skip
    assert ASK_HUMAN_SCHEMA["required"] == []  # questions or requested_schema: the parser says which is missing
    assert ASK_HUMAN_SCHEMA["properties"]["wait_seconds"]["maximum"] == 50
    assert ASK_HUMAN_SCHEMA["properties"]["wait_seconds"]["default"] == 45
    assert "channel" not in ASK_USER_SCHEMA["properties"]  # the port's schema was copied, not changed
    jsonschema.validate(args(channel="C0GENERAL", assignees=["U0BOB"], wait_seconds=10), ASK_HUMAN_SCHEMA)


def test_the_title_is_the_one_given_or_names_the_origin() -> None:
    given, _ = parse_ask_human(args(channel="C0GENERAL", title="Ship the hotfix?"), "claude-desktop")
    assert given.request.reason == "Ship the hotfix?"
    default, _ = parse_ask_human(args(channel="C0GENERAL"), "claude-desktop")
    assert default.request.reason == "claude-desktop needs your input"
    for bad in ("", "  ", 3):
        assert f"title must be a non-empty string, not {bad!r}" in problems(args(channel="C0GENERAL", title=bad))
    assert "reason" in problems(args(channel="C0GENERAL", title="x" * 5000))


def test_arguments_become_the_question_ask_user_describes() -> None:
    body, wait = parse_ask_human(args(channel="C0GENERAL", assignees=["U0BOB"], context={"ticket": "OPS-1"}))
    assert wait == 45.0
    assert body.channel == "C0GENERAL" and body.user is None and body.context == {"ticket": "OPS-1"}
    assert [i.id for i in body.request.items] == ["sev", "sev__other"]
    assert body.request.assignees == ["U0BOB"]
    dm, wait = parse_ask_human(args(user="U0BOB", wait_seconds=0))
    assert dm.user == "U0BOB" and dm.channel is None and wait == 0.0 and dm.request.assignees == []


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (args(), 'give exactly one of "channel"'),
        (args(channel="C0GENERAL", user="U0BOB"), 'give exactly one of "channel"'),
        (args(channel="general"), "channel: String should match pattern"),
        (args(channel="C0GENERAL", wait_seconds=51), "wait_seconds must be a number of seconds from 0 to 50"),
        (args(channel="C0GENERAL", wait_seconds=-1), "wait_seconds must be a number of seconds from 0 to 50"),
        (args(channel="C0GENERAL", wait_seconds="soon"), "not 'soon'"),
        (args(channel="C0GENERAL", assignees="U0BOB"), "assignees must be a list of Slack user ids"),
        (args(channel="C0GENERAL", assignees=["bob"]), "assignees: 'bob' is not a Slack user id"),
        (args(channel="C0GENERAL", assignees=[f"U{n:04d}X" for n in range(21)]), "at most 20 Slack user ids, not 21"),
        ({"questions": [], "channel": "C0GENERAL"}, "ask 1-5 questions, got 0"),
        ({"channel": "C0GENERAL"}, "'questions' must be a list"),
        (args(channel="C0GENERAL", reason="x"), "unknown property 'reason'"),
        ("not an object", "arguments must be a JSON object"),
        (
            {"questions": [{"id": "otp", "header": "Code", "question": "Code?", "type": "secret"}], "user": "U0BOB"},
            "question 'otp': type 'secret' cannot be asked over MCP",
        ),
    ],
)
def test_bad_arguments_name_the_problem(arguments: Any, expected: str) -> None:
    message = problems(arguments)
    assert message.startswith("invalid ask_human arguments: ")
    assert expected in message


def test_ask_human_takes_the_new_item_types() -> None:
    questions = [
        {"id": "n", "header": "Replicas", "question": "How many?", "type": "number", "max": 10, "integer": True},
        {"id": "b", "header": "Go", "question": "Deploy now?", "type": "boolean"},
        {"id": "e", "header": "Contact", "question": "Email?", "type": "email"},
        {"id": "u", "header": "Runbook", "question": "Link?", "type": "url"},
        {"id": "t", "header": "At", "question": "Time?", "type": "time"},
    ]
    arguments = {"questions": questions, "channel": "C0GENERAL"}
    jsonschema.validate(arguments, ASK_HUMAN_SCHEMA)
    body, _ = parse_ask_human(arguments)
    assert [i.type.value for i in body.request.items] == ["number", "boolean", "email", "url", "time"]
    assert body.request.items[0].max == 10 and body.request.items[0].integer
    when = {"id": "w", "header": "When", "question": "Start?", "type": "datetime"}
    body, _ = parse_ask_human({"questions": [when], "user": "U0BOB"})
    assert body.request.items[0].type.value == "datetime"


def form(**ticket: Any) -> dict[str, Any]:
    """`ask_human` arguments asking one string property, `ticket`, with the keywords given."""
    schema = {"type": "object", "properties": {"ticket": {"type": "string", **ticket}}}
    return {"channel": "C0GENERAL", "message": "Which ticket?", "requested_schema": schema}


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"maxLength": 0}, "maxLength 0 leaves nothing to type"),
        ({"maxLength": -1}, "maxLength must be a whole number of characters, 0 or more, not -1"),
        ({"maxLength": "3"}, "maxLength must be a whole number of characters, 0 or more, not '3'"),
        ({"maxLength": 2.5}, "maxLength must be a whole number of characters, 0 or more, not 2.5"),
        ({"minLength": "3"}, "minLength must be a whole number of characters, 0 or more, not '3'"),
        ({"minLength": True}, "minLength must be a whole number of characters, 0 or more, not True"),
        ({"minLength": -2}, "minLength must be a whole number of characters, 0 or more, not -2"),
        ({"minLength": 5, "maxLength": 3}, "maxLength 3 is below minLength 5"),
        ({"minLength": 5000}, "minLength 5000 is over the 3000 characters"),
    ],
)
def test_string_bounds_that_bound_nothing_are_refused_naming_the_property(
    bounds: dict[str, Any], expected: str
) -> None:
    message = problems(form(**bounds))
    assert f"requested_schema: property 'ticket': {expected}" in message, message


def test_string_bounds_that_fit_are_the_items_own() -> None:
    def item(**bounds: Any) -> tuple[int | None, int | None]:
        body, _ = parse_ask_human(form(**bounds))
        [asked] = body.request.items
        return asked.min_length, asked.max_length

    assert item(minLength=2, maxLength=12) == (2, 12)
    assert item(minLength=3, maxLength=3) == (3, 3)
    assert item(minLength=0) == (None, None)  # 0: no bound
    assert item(maxLength=5000) == (None, None)  # past Slack's text input: Slack's own limit bounds it
    assert item(maxLength=12.0) == (None, 12)  # JSON Schema's integers include 12.0


def test_every_problem_is_listed_at_once() -> None:
    bad = {"questions": [{"id": "a", "type": "single"}], "channel": "C0GENERAL", "wait_seconds": 99}
    message = problems(bad)
    assert "wait_seconds" in message and "header must be non-empty text" in message and "2-20 options" in message


def test_get_answer_arguments() -> None:
    assert parse_get_answer({"question_id": " r123 "}) == ("r123", 45.0)
    assert parse_get_answer({"question_id": "r123", "wait_seconds": 3}) == ("r123", 3.0)
    for bad, expected in [
        ({}, "question_id must be the question_id ask_human returned"),
        ({"question_id": ""}, "question_id must be"),
        ({"question_id": "r1", "wait_seconds": 60}, "from 0 to 50"),
        ({"question_id": "r1", "wait": 3}, "unknown property 'wait'"),
        ([], "arguments must be a JSON object"),
    ]:
        with pytest.raises(ToolInputError, match="invalid get_answer arguments") as caught:
            parse_get_answer(bad)
        assert expected in str(caught.value)


def view(status: QuestionStatus, **fields: Any) -> QuestionView:
    now = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    return QuestionView(id="r1", status=status, created_at=now, origin="mcp", reason="r", **fields)


def test_results() -> None:
    assert tool_result(view(QuestionStatus.WAITING)) == {"status": "waiting", "question_id": "r1"}
    answered = view(
        QuestionStatus.ANSWERED,
        answers={"sev": "High"},
        answered_by="U0BOB",
        answered_at=datetime(2026, 12, 1, 7, 5, tzinfo=UTC),
    )
    assert tool_result(answered) == {
        "status": "answered",
        "question_id": "r1",
        "answers": {"sev": "High"},
        "answered_by": "U0BOB",
        "answered_at": "2026-12-01T07:05:00+00:00",
    }
    typed = tool_result(view(QuestionStatus.ANSWERED, answers={"n": 3, "r": 0.5, "b": False}))
    assert json.loads(json.dumps(typed))["answers"] == {"n": 3, "r": 0.5, "b": False}
    assert tool_result(view(QuestionStatus.EXPIRED)) == {"status": "expired", "question_id": "r1", "answers": None}
    cancelled = tool_result(view(QuestionStatus.CANCELLED, cancelled_by="U0ALICE"))
    assert cancelled["status"] == "cancelled" and cancelled["cancelled_by"] == "U0ALICE"


def test_the_mcp_body_cap_is_above_the_largest_ask_human_call() -> None:
    option = {"label": "l" * LABEL_MAX, "description": "d" * LABEL_MAX}
    question = {"header": "h" * HEADER_MAX, "question": "q" * QUESTION_MAX, "type": "multiple", "required": True}
    questions = [
        {
            **question,
            "id": f"{n}" + "i" * 63,
            "options": [{**option, "label": f"{k:02d}" + "l" * 73} for k in range(20)],
        }
        for n in range(MAX_QUESTIONS)
    ]
    arguments = {
        "questions": questions,
        "context": {"c": "y" * (CONTEXT_MAX - len('{"c":""}'))},
        "channel": "C" + "0" * 20,
        "assignees": [f"U{n:02d}" + "X" * 18 for n in range(20)],
        "wait_seconds": 50,
    }
    parse_ask_human(arguments)  # valid
    call = {
        "jsonrpc": "2.0",
        "id": 2**53,
        "method": "tools/call",
        "params": {"name": "ask_human", "arguments": arguments},
    }
    assert len(json.dumps(call, indent=2).encode()) < MCP_BODY_MAX


@pytest.mark.parametrize(
    ("bind", "hosts"),
    [
        ("127.0.0.1", ["127.0.0.1", "localhost", "[::1]"]),
        ("::1", ["127.0.0.1", "localhost", "[::1]"]),
        ("localhost", ["127.0.0.1", "localhost", "[::1]"]),
        ("0.0.0.0", ["127.0.0.1", "localhost", "[::1]"]),  # a wildcard: the operator lists the public names
        ("10.0.0.7", ["127.0.0.1", "localhost", "[::1]", "10.0.0.7"]),
        ("fd00::7", ["127.0.0.1", "localhost", "[::1]", "[fd00::7]"]),
    ],
)
def test_mcp_hosts_default_to_the_loopback_names_and_the_bound_address(bind: str, hosts: list[str]) -> None:
    assert default_hosts(bind) == hosts


def test_allowed_hosts_take_any_port_unless_one_is_named() -> None:
    security = transport_security(["parley.example.com", "Edge.Example.com:8443", "fd00::7"], ["https://desk.example/"])
    assert security.enable_dns_rebinding_protection is True
    assert security.allowed_hosts == [
        "parley.example.com",
        "parley.example.com:*",
        "edge.example.com:8443",
        "[fd00::7]",
        "[fd00::7]:*",
    ]
    assert security.allowed_origins == ["https://desk.example"]
