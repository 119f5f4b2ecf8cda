"""Every MCP tool declares an output schema, and every kind of result validates against it: `declare`
refuses a tool without a usable one, `OutputCheck` refuses a server with an undeclared tool and a
result that does not match, and `tool_result` of every outcome (waiting, answered, expired,
cancelled, failed, approval decisions, MCP elicitation's `{action, content}`) matches `RESULT_SCHEMA`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import anyio
import jsonschema
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from bot.mcp.outputs import OutputCheck, OutputSchemaError, declare
from bot.mcp.permission import ANSWER_SCHEMA
from bot.mcp.server import OUTPUTS, TOOLS, Tools
from bot.mcp.tools import RESULT_SCHEMA, tool_result
from workers.interaction import Decision
from workers.questions.models import QuestionStatus, QuestionView

pytestmark = pytest.mark.unit

AT = datetime(2026, 12, 1, 7, 5, tzinfo=UTC)
TEXT_ONLY = {"approve_tool_use": ANSWER_SCHEMA}


def view(status: QuestionStatus, **fields: Any) -> QuestionView:
    return QuestionView(id="r1", status=status, created_at=AT, origin="mcp", reason="r", **fields)


def listed() -> list[types.Tool]:
    tools = Tools(service=None, caller_of=lambda ctx: None)  # type: ignore[arg-type]
    return anyio.run(lambda: tools.list_tools(None, None)).tools  # type: ignore[arg-type]


def test_every_listed_tool_but_the_permission_prompt_declares_an_object_output_schema() -> None:
    tools = listed()
    assert {t.name for t in tools} >= {"ask_human", "get_answer", "request_approval"}
    for tool in tools:
        if tool.name == "approve_tool_use":  # Claude Code refuses an outputSchema on its permission prompt
            continue
        assert tool.output_schema is not None, f"{tool.name} declares no outputSchema"
        assert tool.output_schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    wire = types.ListToolsResult(tools=tools).model_dump(by_alias=True, exclude_none=True)
    assert [t["name"] for t in wire["tools"] if "outputSchema" not in t] == ["approve_tool_use"]


def test_the_permission_prompt_answers_with_one_text_block_only() -> None:
    """Claude Code reads a permission answer only as one text block: no structuredContent beside it."""
    answer = {"behavior": "deny", "message": "not on a Friday"}
    result = OUTPUTS.result("approve_tool_use", answer)
    wire = result.model_dump(by_alias=True, exclude_none=True)
    assert wire["content"] == [{"type": "text", "text": json.dumps(answer)}] and "structuredContent" not in wire
    with pytest.raises(MCPError):  # still checked: allow always carries updatedInput
        OUTPUTS.result("approve_tool_use", {"behavior": "allow"})
    asked = OUTPUTS.result("get_answer", results()["waiting"])
    assert asked.structured_content == results()["waiting"]


def test_a_text_only_tool_must_declare_no_output_schema() -> None:
    declared = declare("approve_tool_use", "", {"type": "object"}, {"type": "object"})
    with pytest.raises(OutputSchemaError, match="answers as text only"):
        OutputCheck([declared], text_only={"approve_tool_use": {"type": "object"}})
    with pytest.raises(OutputSchemaError, match="not among the server's tools"):
        OutputCheck([], text_only={"approve_tool_use": {"type": "object"}})


def test_a_tool_without_a_usable_output_schema_is_refused() -> None:
    bare = types.Tool(name="bare", input_schema={"type": "object"})
    with pytest.raises(OutputSchemaError, match="'bare' declares no output schema"):
        OutputCheck([*TOOLS, bare], text_only=TEXT_ONLY)
    with pytest.raises(OutputSchemaError, match="must describe an object"):
        declare("listy", "", {"type": "object"}, {"type": "array"})
    with pytest.raises(jsonschema.SchemaError):
        declare("broken", "", {"type": "object"}, {"type": "object", "properties": {"a": {"type": 7}}})


def results() -> dict[str, dict[str, Any]]:
    decided = Decision(approved=True, args={"replicas": 2}, edited=True, changes=[("replicas", 4, 2)], by="U0BOB")
    rejected = Decision(approved=False, args={"replicas": 4}, reason="not now", by="U0BOB")
    answered = {"answers": {"plan": "Canary", "plan__other": None}, "answered_by": "U0BOB", "answered_at": AT}
    return {
        "waiting": tool_result(view(QuestionStatus.WAITING)),
        "answered": tool_result(view(QuestionStatus.ANSWERED, **answered)),
        "expired": tool_result(view(QuestionStatus.EXPIRED)),
        "cancelled": tool_result(view(QuestionStatus.CANCELLED, cancelled_by="admin")),
        "failed": tool_result(view(QuestionStatus.FAILED, error="channel_not_found")),
        "approved": tool_result(view(QuestionStatus.ANSWERED, decision=decided, **answered)),
        "rejected": tool_result(view(QuestionStatus.ANSWERED, decision=rejected, **answered)),
    }


@pytest.mark.parametrize("outcome", list(results()))
def test_every_outcome_validates_against_every_tools_schema(outcome: str) -> None:
    result = results()[outcome]
    assert result["status"] in {s.value for s in QuestionStatus}
    check = OutputCheck(TOOLS, text_only=TEXT_ONLY)
    question_tools = [tool for tool in TOOLS if tool.output_schema == RESULT_SCHEMA]
    assert {tool.name for tool in question_tools} == {"ask_human", "get_answer", "request_approval"}
    for tool in question_tools:  # approve_tool_use answers allow/deny: tests/mcp/test_mcp_permission.py
        check.check(tool.name, result)  # raises on a mismatch
    jsonschema.validate(result, RESULT_SCHEMA)


def test_elicitation_results_fit_the_schema_as_an_optional_part() -> None:
    base = {"status": "answered", "question_id": "r1"}
    accepted = {**base, "action": "accept", "content": {"email": "a@example.com", "count": 3}}
    for fine in (accepted, {**base, "action": "decline"}, {**base, "action": "cancel", "content": None}):
        jsonschema.validate(fine, RESULT_SCHEMA)
    for bad in ({**base, "action": "maybe"}, {**base, "content": "text"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, RESULT_SCHEMA)


def test_a_result_that_drifted_from_its_schema_is_an_internal_error_not_sent() -> None:
    check = OutputCheck(TOOLS, text_only=TEXT_ONLY)
    for drifted in ({"status": "answered"}, {"status": "done", "question_id": "r1"}, {"question_id": "r1", "x": 1}):
        with pytest.raises(MCPError) as caught:
            check.check("ask_human", drifted)
        assert caught.value.code == INTERNAL_ERROR and "did not match its output schema" in caught.value.message
