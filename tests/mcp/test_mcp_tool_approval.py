"""The one tool-call approval `approve_tool_use` and the gateway share (`bot.mcp.tool_approval`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.mcp.rules import REDACTED, parse_config
from bot.mcp.tool_approval import ToolApproval
from workers.interaction import Decision
from workers.questions.models import QuestionStatus, QuestionView

pytestmark = pytest.mark.unit
RULES = parse_config("channel: C0OPS\nassignees: [U0BOB]\nexpires_in: 60\nrules: []", {})
GIVEN = {"path": "a.txt", "token": "s3cret", "note": "uses s3cret"}


def view(status: QuestionStatus, **fields: Any) -> QuestionView:
    at = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    return QuestionView(id="r1", status=status, created_at=at, origin="desk", reason="r", **fields)


def test_the_question_hides_redacted_values_and_edits_only_what_shows_as_given() -> None:
    body = ToolApproval(GIVEN, ("token",), RULES).question("Call files.write", reason="desk asks")
    approval = body.request.approval
    assert approval is not None
    assert approval.args == {"path": "a.txt", "token": REDACTED, "note": f"uses {REDACTED}"}
    assert approval.editable == ["path"]
    assert (body.channel, body.request.assignees, body.request.expires_in) == ("C0OPS", ["U0BOB"], 60)
    assert body.context == approval.args and "s3cret" not in body.model_dump_json()


def test_the_tools_schema_checks_the_edits() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string", "not": {"const": "x"}}}}
    body = ToolApproval({"path": "a.txt"}, (), RULES).question("Call files.write", schema=schema)
    assert body.request.approval is not None and body.request.approval.input_schema == schema


def test_no_channel_is_refused_before_anything_is_asked() -> None:
    with pytest.raises(ValueError, match="no `channel`"):
        ToolApproval(GIVEN, (), parse_config("rules: []", {})).question("Call files.write")


def test_each_verdict() -> None:
    approval = ToolApproval(GIVEN, ("token",), RULES)
    shown = {"path": "b.txt", "token": REDACTED, "note": f"uses {REDACTED}"}
    approved = approval.verdict(
        view(QuestionStatus.ANSWERED, decision=Decision(approved=True, args=shown, edited=True, by="U0BOB"))
    )
    assert approved is not None and approved.arguments == {**GIVEN, "path": "b.txt"} and approved.edited
    rejected = approval.verdict(
        view(QuestionStatus.ANSWERED, decision=Decision(approved=False, args={}, reason="no", by="U0BOB"))
    )
    assert rejected is not None and rejected.rejected and (rejected.why, rejected.by) == ("no", "U0BOB")
    expired = approval.verdict(view(QuestionStatus.EXPIRED))
    assert expired is not None and expired.why == "not approved within 1 minute" and not expired.rejected
    cancelled = approval.verdict(view(QuestionStatus.CANCELLED, cancelled_by="desk"))
    assert cancelled is not None and cancelled.why == "the approval was cancelled by desk"
    assert approval.verdict(view(QuestionStatus.WAITING)) is None
