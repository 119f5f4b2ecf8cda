"""Claude Code's side of `approve_tool_use`, for the tests: the setup docs/api.md#claude-code shows,
the server it starts, the result read as Claude Code reads it, and a person deciding in Slack."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult
from pydantic import BaseModel, ConfigDict, TypeAdapter
from slack_forms import button_action, find_element, form_state, has_action, texts
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import PARLEY, SlackStack

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
TOOL = "approve_tool_use"
PLACEHOLDERS = ("REDIS_URL", "SLACK_BOT_TOKEN")
"""The doc's env entries whose values are the reader's own: here, the stack's."""


# ---- the doc ---------------------------------------------------------------------------------
def section() -> str:
    text = DOC.read_text()
    start = text.index("\n## Claude Code\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def fenced(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", section(), re.DOTALL)


def doc_rules() -> dict[str, Any]:
    [rules] = fenced("yaml")
    return dict(yaml.safe_load(rules))


def doc_server() -> dict[str, Any]:
    [config] = [json.loads(block) for block in fenced("json") if "mcpServers" in block]
    return dict(config["mcpServers"]["parley"])


# ---- Claude Code's reading of the result -----------------------------------------------------
class Allow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    behavior: Literal["allow"]
    updatedInput: dict[str, Any]  # Claude Code's name


class Deny(BaseModel):
    model_config = ConfigDict(extra="forbid")
    behavior: Literal["deny"]
    message: str


DECISION: TypeAdapter[Allow | Deny] = TypeAdapter(Allow | Deny)


def as_claude_code_reads(result: CallToolResult) -> Allow | Deny:
    """One text content holding the JSON payload, allow or deny, nothing else (no structured content)."""
    assert not result.is_error, result.content
    [content] = result.content
    assert content.type == "text"
    assert result.structured_content is None  # Claude Code refuses a permission answer that carries it
    return DECISION.validate_json(content.text)


def claude_code_client(stack: SlackStack, setup_dir: Path) -> Client:
    server = doc_server()
    env = {**stack.env(), **server["env"], **{k: stack.env()[k] for k in PLACEHOLDERS}}
    env["PATH"] = f"{PARLEY.parent}:{env.get('PATH', '')}"  # `parley`, as the doc names it, is Parley's own
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env, cwd=str(setup_dir))
    return Client(params, read_timeout_seconds=120)


def approval(stack: SlackStack, tool: str, heading: str = "Run the tool", timeout: float = 20) -> dict[str, Any]:
    """The open approval message asking about `tool` (after `heading`), once it is posted."""
    channel = doc_rules()["channel"]

    def find() -> dict[str, Any] | None:
        open_ones = [
            m
            for m in stack.ws.messages(channel)
            if f"{heading} {tool}" in texts(m.get("blocks") or [])
            and has_action(m.get("blocks") or [], "parley_approve")
        ]
        return open_ones[-1] if open_ones else None

    stack.wait_for(f"the approval of {tool}", find, timeout)
    stack.settle()  # posted and done with: a click on a version being updated would be refused
    return stack.wait_for(f"the approval of {tool}", find)


def approver() -> str:
    return str(doc_rules()["assignees"][0])


def click(stack: SlackStack, message: dict[str, Any], action_id: str) -> dict[str, Any] | None:
    """The approver clicks `action_id`; the modal it opens, if any."""
    user, channel = approver(), doc_rules()["channel"]
    block, button = find_element(message["blocks"], action_id)
    mark = stack.mark()
    payload = block_actions_payload(
        user=user, message=message, channel=channel, action=button_action(block, button),
        trigger=stack.ws.issue_trigger(user),
    )  # fmt: skip
    assert stack.interact(payload).status_code == 200
    if action_id == "parley_approve":
        return None
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark, what="the modal to open")
    return stack.ws.open_views(user)[-1]


def submit(stack: SlackStack, view: dict[str, Any], fills: dict[str, Any]) -> None:
    state = form_state(view["blocks"], fills)
    resp = stack.interact(view_submission_payload(user=approver(), view=view, state_values=state))
    assert resp.status_code == 200 and resp.text == "", resp.text


def decide(
    stack: SlackStack,
    connect: Callable[[], Client],
    args: dict[str, Any],
    person: Callable[[], None],
    progress: list[float] | None = None,
) -> CallToolResult:
    """Call approve_tool_use with `args` while `person()` decides in Slack; progress reported goes to `progress`."""

    async def reported(value: float, total: float | None, message: str | None) -> None:
        assert progress is not None
        progress.append(value)

    got: dict[str, CallToolResult] = {}

    async def scenario() -> None:
        async with connect() as client:

            async def call() -> None:
                got["result"] = await client.call_tool(
                    TOOL, args, progress_callback=reported if progress is not None else None
                )

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(person)

    anyio.run(scenario)
    return got["result"]
