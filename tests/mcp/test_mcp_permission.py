"""`approve_tool_use` and `ask_human`'s elicitation results without a server: the rules' answers,
the approval a person is asked, each outcome as Claude Code reads it, the declared output schema,
and `action` (accept, decline, cancel) with typed `content`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from bot.mcp.elicitation import ELICITATION, elicit_result
from bot.mcp.permission import (
    ANSWER_SCHEMA,
    APPROVE_TOOL_USE_SCHEMA,
    approval_question,
    parse_permission,
    reply,
    rules_answer,
)
from bot.mcp.rules import REDACTED, parse_config
from bot.mcp.tool_approval import ToolApproval
from bot.mcp.tools import ToolInputError, parse_ask_human, tool_result
from workers.interaction import Decision
from workers.questions.models import QuestionStatus, QuestionView

pytestmark = pytest.mark.unit

RULES = parse_config(
    """
channel: C0OPS
assignees: [U0BOB]
expires_in: 600
rules:
  - {tools: "Read", action: allow}
  - {tools: "WebFetch", action: deny, reason: "no web access"}
  - {tools: "Deny*", action: deny}
  - {tools: "mcp__deploy__*", action: ask, redact: ["token", "auth.*"]}
""",
    {},
)


def view(status: QuestionStatus, **fields: Any) -> QuestionView:
    now = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    return QuestionView(id="r1", status=status, created_at=now, origin="claude-code", reason="r", **fields)


def test_the_rules_allow_and_deny_without_asking() -> None:
    given = {"file_path": "/a"}
    assert rules_answer(RULES, "Read", given) == {"behavior": "allow", "updatedInput": given}
    assert rules_answer(RULES, "WebFetch", {}) == {"behavior": "deny", "message": "no web access"}
    assert rules_answer(RULES, "DenyAll", {}) == {"behavior": "deny", "message": "the rules file denies DenyAll"}
    assert rules_answer(RULES, "Bash", {}) is None  # no rule: asked
    no_channel = parse_config("rules: []", {})
    assert rules_answer(no_channel, "Bash", {})["message"].endswith("add `channel` to the rules file")  # type: ignore[index]
    for answer in (rules_answer(RULES, "Read", given), rules_answer(RULES, "WebFetch", {})):
        jsonschema.validate(answer, ANSWER_SCHEMA)


def outcome(view: QuestionView, given: dict[str, Any], patterns: tuple[str, ...], expires_in: int) -> Any:
    """What Claude Code is answered for `view`, asked under `RULES` expiring after `expires_in`."""
    config = RULES.model_copy(update={"expires_in": expires_in})
    return reply(ToolApproval(given, patterns, config).verdict(view))


def test_the_input_is_claude_codes_and_other_properties_are_ignored() -> None:
    jsonschema.Draft202012Validator.check_schema(APPROVE_TOOL_USE_SCHEMA)
    jsonschema.Draft202012Validator.check_schema(ANSWER_SCHEMA)
    parsed = parse_permission({"tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "t1", "later": 1})
    assert parsed == ("Bash", {"command": "ls"}, "t1")
    with pytest.raises(ToolInputError) as caught:
        parse_permission({"tool_name": "", "input": "ls"})
    assert "tool_name must be the tool's name" in str(caught.value) and "input must be the tool's" in str(caught.value)


def test_the_approval_shows_redacted_values_and_cannot_edit_them() -> None:
    given = {"service": "api", "token": "s3cret", "auth": {"key": "k"}, "replicas": 2}
    body = approval_question(ToolApproval(given, ("token", "auth.*"), RULES), "mcp__deploy__release", "toolu_9")
    request = body.request
    assert request.approval is not None
    assert request.approval.args == {"service": "api", "token": REDACTED, "auth": {"key": REDACTED}, "replicas": 2}
    assert request.approval.editable == ["service", "replicas"]
    assert "s3cret" not in body.model_dump_json()
    assert (body.channel, request.assignees, request.expires_in) == ("C0OPS", ["U0BOB"], 600)
    assert body.metadata == {"tool_name": "mcp__deploy__release", "tool_use_id": "toolu_9"}


def test_each_outcome_as_claude_code_reads_it() -> None:
    given = {"service": "api", "token": "s3cret"}
    patterns = ("token",)
    approved = Decision(approved=True, args={"service": "web", "token": REDACTED}, edited=True, by="U0BOB")
    rejected = Decision(approved=False, args={}, reason="not today", by="U0BOB")
    silent = Decision(approved=False, args={}, by="U0BOB")
    answers = [
        outcome(view(QuestionStatus.ANSWERED, decision=approved), given, patterns, 900),
        outcome(view(QuestionStatus.ANSWERED, decision=rejected), given, patterns, 900),
        outcome(view(QuestionStatus.ANSWERED, decision=silent), given, patterns, 900),
        outcome(view(QuestionStatus.EXPIRED), given, patterns, 900),
        outcome(view(QuestionStatus.CANCELLED, cancelled_by="claude-code"), given, patterns, 90),
        outcome(view(QuestionStatus.FAILED, error="channel_not_found"), given, patterns, 900),
    ]
    assert answers == [
        {"behavior": "allow", "updatedInput": {"service": "web", "token": "s3cret"}},
        {"behavior": "deny", "message": "not today"},
        {"behavior": "deny", "message": "Rejected in Slack by U0BOB"},
        {"behavior": "deny", "message": "not approved within 15 minutes"},
        {"behavior": "deny", "message": "the approval was cancelled by claude-code"},
        {"behavior": "deny", "message": "the approval could not be asked: channel_not_found"},
    ]
    for answer in answers:
        jsonschema.validate(answer, ANSWER_SCHEMA)
    assert outcome(view(QuestionStatus.WAITING), given, patterns, 900) is None
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"behavior": "allow"}, ANSWER_SCHEMA)  # allow always carries updatedInput


SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", "enum": ["a"]}}},
    "required": ["n"],
}


def test_ask_human_with_requested_schema_keeps_the_shape_and_message() -> None:
    body, _ = parse_ask_human({"channel": "C0OPS", "message": "How many?", "requested_schema": SCHEMA}, "desk")
    assert body.request.reason == "How many?" and [i.id for i in body.request.items] == ["n", "tags"]
    shape = {"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array"}}}
    assert body.metadata == {ELICITATION: shape}
    untitled, _ = parse_ask_human({"channel": "C0OPS", "requested_schema": SCHEMA}, "desk")
    assert untitled.request.reason == "desk needs your input"
    with pytest.raises(ToolInputError) as caught:
        parse_ask_human({"channel": "C0OPS", "message": "Hi", "questions": []})
    assert "message goes with requested_schema" in str(caught.value)


def test_results_carry_action_and_typed_content() -> None:
    shape = {ELICITATION: {"type": "object", "properties": {"n": {"type": "integer"}}}}
    accepted = tool_result(view(QuestionStatus.ANSWERED, answers={"n": 4.0}, metadata=shape))
    assert (accepted["action"], accepted["content"]) == ("accept", {"n": 4})
    by_person = tool_result(view(QuestionStatus.CANCELLED, cancelled_by="U0BOB", declined=True, metadata=shape))
    by_asker = tool_result(view(QuestionStatus.CANCELLED, cancelled_by="desk", metadata=shape))
    expired = tool_result(view(QuestionStatus.EXPIRED, metadata=shape))
    assert [r["action"] for r in (by_person, by_asker, expired)] == ["decline", "cancel", "cancel"]
    assert not any("content" in r for r in (by_person, by_asker, expired))
    assert tool_result(view(QuestionStatus.WAITING, metadata=shape)) == {"status": "waiting", "question_id": "r1"}
    assert "action" not in tool_result(view(QuestionStatus.ANSWERED, answers={"n": 4}))  # asked with questions
    assert elicit_result(view(QuestionStatus.WAITING), SCHEMA) is None


@pytest.mark.parametrize("asker", ["WORKFLOW", "UPLOADER", "U0BOB", "probe-lower"])
def test_an_askers_own_cancel_is_cancel_whatever_its_name(asker: str) -> None:
    mine = view(QuestionStatus.CANCELLED, cancelled_by=asker).model_copy(update={"origin": asker})
    assert elicit_result(mine, SCHEMA) == {"action": "cancel"}
    by_person = view(QuestionStatus.CANCELLED, cancelled_by="U0CAROL", declined=True)
    assert elicit_result(by_person.model_copy(update={"origin": asker}), SCHEMA) == {"action": "decline"}


@pytest.mark.parametrize("admin", ["WORKFLOW", "U123ABC", "W0ADMIN", "U0CAROL", "ops-admin"])
def test_a_cancel_by_any_other_name_is_cancel_and_only_a_decline_is_decline(admin: str) -> None:
    """Another token's cancel reads `cancel`: a user-id-like name proves nothing."""
    theirs = view(QuestionStatus.CANCELLED, cancelled_by=admin)
    assert elicit_result(theirs, SCHEMA) == {"action": "cancel"}
    declined = view(QuestionStatus.CANCELLED, cancelled_by=admin, declined=True)
    assert elicit_result(declined, SCHEMA) == {"action": "decline"}
