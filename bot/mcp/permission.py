"""`approve_tool_use`: Claude Code's permission prompt, answered by the rules file or a person in Slack.

Claude Code runs as `claude -p --permission-prompt-tool mcp__parley__approve_tool_use`. Before
each tool use needing permission, it calls the tool `--permission-prompt-tool` names. The
arguments are `{tool_name, input, tool_use_id}`. Its documentation is the Claude Code SDK's
headless mode, "Custom permission prompt tool". It says the tool "must return a JSON-stringified
payload". That is `{"behavior": "allow", "updatedInput": {...}}` ("updated input, or just return
back the original input"). Or it is `{"behavior": "deny", "message": "..."}` ("human-readable
string explaining why the permission was denied"). So the result is exactly one text block
holding that JSON, and nothing else. There is no `structuredContent`, and the tool declares no
`outputSchema`. Claude Code refuses either ("Permission prompt tool returned an invalid
result"). See `bot.mcp.outputs`. The JSON is still checked against `ANSWER_SCHEMA` before it is
sent. `updatedInput` is always given on allow, since Claude Code runs the tool with it.

The rules file decides per `tool_name` (`bot.mcp.rules`). It comes from `parley mcp --config`,
or `PARLEY_MCP_CONFIG` for `/mcp`.
- `allow` answers at once, with the input unchanged.
- `deny` answers with the rule's reason.
- `ask` asks an approval, as the gateway does (`bot.mcp.tool_approval`). That is also the case
  with no file, or no matching rule. The approval goes in the file's `channel`, to its
  `assignees`. It expires after its `expires_in`, 900 s by default. Approve allows the input.
  Edit… allows the edited input as `updatedInput`. Reject denies, with the reason given.
`redact` paths are shown as `••••` and never editable. The real values go back in
`updatedInput`. Such a value is shown as `••••` wherever else it appears in the input too
(`bot.mcp.scrub`).

Claude Code waits for the tool's result, and there is no get_answer to come back with. So the
call waits until the approval closes, as every MCP wait does (`workers.questions.waiting`). That
is at most `expires_in` plus `GRACE` seconds. An expired approval is a deny saying "not approved
within 15 minutes" (`deadlines.human`). One still open at that bound is cancelled. Meanwhile the
server sends progress notifications every 15 s to a client that gave a progress token. A call
the client cancels cancels its approval in Slack. So nobody approves what nobody waits for.
"""

from __future__ import annotations

from typing import Any

from bot.mcp.rules import RuleAction, RulesConfig
from bot.mcp.tool_approval import ToolApproval, Verdict
from bot.mcp.tools import ToolInputError
from workers.questions.models import QuestionCreate, QuestionStatus

APPROVE_TOOL_USE = "approve_tool_use"
TOOL_NAME_MAX = 200
APPROVE_TOOL_USE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool_name": {"type": "string", "minLength": 1, "maxLength": TOOL_NAME_MAX, "description": "The tool to run."},
        "input": {"type": "object", "description": "The arguments it would run with."},
        "tool_use_id": {"type": "string", "description": "The tool use's id, kept with the approval."},
    },
    "required": ["tool_name", "input"],
}
"""Claude Code's permission prompt input; other properties a later Claude Code may send are ignored."""
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "oneOf": [
        {
            "properties": {
                "behavior": {"const": "allow"},
                "updatedInput": {"type": "object", "description": "The input to run the tool with (maybe edited)."},
            },
            "required": ["behavior", "updatedInput"],
            "additionalProperties": False,
        },
        {
            "properties": {
                "behavior": {"const": "deny"},
                "message": {"type": "string", "description": "Why, as people read it."},
            },
            "required": ["behavior", "message"],
            "additionalProperties": False,
        },
    ],
}
"""The JSON in `approve_tool_use`'s one text block: checked before sending, never published as outputSchema."""
APPROVE_TOOL_USE_DESCRIPTION = (
    "Claude Code's permission prompt (--permission-prompt-tool mcp__parley__approve_tool_use): decides whether "
    "tool_name may run with input, by the rules file or by asking a person in Slack, who may edit the input. "
    'Returns {"behavior": "allow", "updatedInput": {...}} or {"behavior": "deny", "message": "..."}.'
)


def parse_permission(args: Any) -> tuple[str, dict[str, Any], str]:
    """`approve_tool_use`'s tool name, input and tool use id (or "").

    Otherwise `ToolInputError`: the call is not a permission prompt. It has no tool name, or an
    input that is not an object.
    """
    if not isinstance(args, dict):
        raise ToolInputError(APPROVE_TOOL_USE, ["arguments must be a JSON object with 'tool_name' and 'input'"])
    problems: list[str] = []
    name, given, use_id = args.get("tool_name"), args.get("input"), args.get("tool_use_id", "")
    if not isinstance(name, str) or not name.strip() or len(name) > TOOL_NAME_MAX:
        problems.append(f"tool_name must be the tool's name (1-{TOOL_NAME_MAX} characters), not {name!r}")
    if not isinstance(given, dict):
        problems.append(f"input must be the tool's arguments as a JSON object, not {type(given).__name__}")
    if not isinstance(use_id, str):
        problems.append("tool_use_id must be a string")
    if problems:
        raise ToolInputError(APPROVE_TOOL_USE, problems)
    return str(name).strip(), dict(given or {}), str(use_id)


def allow(updated: dict[str, Any]) -> dict[str, Any]:
    return {"behavior": "allow", "updatedInput": updated}


def deny(message: str) -> dict[str, Any]:
    return {"behavior": "deny", "message": message}


def approval_question(approval: ToolApproval, name: str, use_id: str) -> QuestionCreate:
    """The approval a person is asked, with the rule's paths redacted, not editable."""
    return approval.question(f"Run the tool {name}", metadata={"tool_name": name, "tool_use_id": use_id})


def reply(verdict: Verdict | None) -> dict[str, Any] | None:
    """What Claude Code is answered once the approval closed, None while it waits."""
    if verdict is None:
        return None
    if verdict.arguments is not None:
        return allow(verdict.arguments)
    if verdict.rejected:
        return deny(verdict.why or "Rejected in Slack" + (f" by {verdict.by}" if verdict.by else ""))
    if verdict.status in (QuestionStatus.EXPIRED, QuestionStatus.CANCELLED):
        return deny(verdict.why)
    return deny(f"the approval could not be asked: {verdict.why}")


def rules_answer(config: RulesConfig, name: str, given: dict[str, Any]) -> dict[str, Any] | None:
    """The rules file's unasked answer (allow or deny), or None to ask a person."""
    rule = config.rule_for(name)
    if rule.action is RuleAction.ALLOW:
        return allow(given)
    if rule.action is RuleAction.DENY:
        return deny(rule.reason or f"the rules file denies {name}")
    if config.channel is None:
        return deny(f"{name} needs approval, and no channel to ask in is set: add `channel` to the rules file")
    return None
