"""Redacted values removed by value (`bot.mcp.scrub`): every spelling an echo may use, in any JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import quote

import mcp_types as types
import pytest

from bot.mcp.permission import approval_question, reply
from bot.mcp.rules import REDACTED, parse_config
from bot.mcp.scrub import Redaction, Scrubber
from bot.mcp.tool_approval import ToolApproval
from workers.interaction import Decision
from workers.questions.models import QuestionStatus, QuestionView

pytestmark = pytest.mark.unit

TOKEN = 'tok-"quoted"\\back é\n'


@pytest.mark.parametrize(
    "echo",
    [
        TOKEN,
        json.dumps(TOKEN),
        json.dumps(TOKEN, ensure_ascii=False),
        json.dumps(json.dumps({"token": TOKEN})),
        repr(TOKEN),
        quote(TOKEN, safe=""),
    ],
    ids=["raw", "json", "json-unicode", "json-twice", "repr", "percent"],
)
def test_every_spelling_of_a_redacted_value_is_scrubbed(echo: str) -> None:
    scrubber = Scrubber.of({"token": TOKEN, "note": "n"}, ("token",))
    scrubbed = scrubber.text(f"refused {echo} at once")
    assert scrubbed.startswith("refused ") and REDACTED in scrubbed
    assert "tok-" not in scrubbed and "quoted" not in scrubbed


def test_values_in_lists_and_objects_and_numbers_are_scrubbed_and_booleans_are_not() -> None:
    args = {"creds": [{"token": "t-one"}, {"token": "t-two"}], "auth": {"pin": 424242, "on": True}}
    scrubber = Scrubber.of(args, ("creds.*.token", "auth"))
    echoed = {"said": "t-one and t-two", "t-two": 424242, "ok": True, "pin": "pin 424242"}
    assert scrubber.value(echoed) == {
        "said": f"{REDACTED} and {REDACTED}",
        REDACTED: REDACTED,
        "ok": True,
        "pin": f"pin {REDACTED}",
    }
    assert not Scrubber.of(args, ()) and Scrubber.of(args, ()).text("t-one") == "t-one"
    joined = Scrubber.joined([Scrubber(["alpha"]), Scrubber(["beta"])])
    assert joined.text("alpha beta gamma") == f"{REDACTED} {REDACTED} gamma"


def test_a_tool_result_is_scrubbed_everywhere_it_carries_text() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(text="signed in with s3cret-value")],
        structured_content={"result": {"token": "s3cret-value"}},
        is_error=True,
    )
    scrubbed = Scrubber(["s3cret-value"]).result(result)
    assert "s3cret-value" not in scrubbed.model_dump_json()
    assert scrubbed.is_error and scrubbed.content[0].text == f"signed in with {REDACTED}"  # type: ignore[union-attr]
    clean = types.CallToolResult(content=[types.TextContent(text="nothing secret")])
    assert Scrubber(["s3cret-value"]).result(clean) is clean


def test_a_value_shown_elsewhere_is_scrubbed_there_not_editable_and_approved_as_given() -> None:
    given = {"token": "s3cret-value", "text": "use s3cret-value here", "path": "a.txt"}
    redaction = Redaction(given, ("token",))
    assert redaction.shown == {"token": REDACTED, "text": f"use {REDACTED} here", "path": "a.txt"}
    assert redaction.editable == ["path"]
    decided = {"token": REDACTED, "text": f"use {REDACTED} here", "path": "b.txt"}
    assert redaction.approved(decided) == {**given, "path": "b.txt"}


def test_approve_tool_use_shows_list_tokens_and_echoes_redacted_and_allows_them_as_given() -> None:
    rules = parse_config("channel: C0OPS\nrules: [{tools: 'Bash', action: ask, redact: ['env.*.value']}]", {})
    patterns = rules.rule_for("Bash").redact
    given = {"command": "deploy --key s3cret-value", "env": [{"name": "KEY", "value": "s3cret-value"}], "cwd": "/srv"}
    approval = ToolApproval(given, patterns, rules)
    body = approval_question(approval, "Bash", "toolu_1")
    assert body.request.approval is not None
    assert body.request.approval.args == {
        "command": f"deploy --key {REDACTED}",
        "env": [{"name": "KEY", "value": REDACTED}],
        "cwd": "/srv",
    }
    assert body.request.approval.editable == ["cwd"]
    assert "s3cret-value" not in body.model_dump_json()
    now = datetime(2026, 12, 1, 7, 0, tzinfo=UTC)
    decided = Decision(approved=True, args={**body.request.approval.args, "cwd": "/tmp"}, edited=True, by="U0BOB")
    answered = QuestionView(
        id="r1", status=QuestionStatus.ANSWERED, created_at=now, origin="claude-code", reason="r", decision=decided
    )
    assert reply(approval.verdict(answered)) == {"behavior": "allow", "updatedInput": {**given, "cwd": "/tmp"}}
