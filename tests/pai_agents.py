"""Pydantic AI agents for the adapter's tests, on a `FunctionModel` written for them (no network).

`PARLEY_AGENTS=pai_agents` (tests on PYTHONPATH) registers them in worker processes. The model,
every execution and every tool run are counted in files (`tests/effect_counters.py`), so a test
reads "called once" from outside every process, a SIGKILLed one's included. Each run's text
starts with its parameters as JSON (`{"hang_on_resume": true} tag`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from effect_counters import bump
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import ExternalToolset

from workers import AgentRun, agent
from workers.integrations.pydantic_ai import run_agent

PROPOSED = {"pay-alice": {"to": "alice", "amount": 5}, "pay-bob": {"to": "bob", "amount": 7}}
"""The two payments the model proposes at once, by tool call id."""


def params(text: str) -> dict[str, Any]:
    text = text.strip()
    if not text.startswith("{"):
        return {}
    obj, _ = json.JSONDecoder().raw_decode(text)
    return dict(obj)


def payments_path(data_dir: Path, run_id: str) -> Path:
    return data_dir / "pai-payments" / f"{run_id}.jsonl"


def payments(data_dir: Path, run_id: str) -> list[dict[str, Any]]:
    """What `pay` did for `run_id`, in order: one line per run of the tool."""
    path = payments_path(data_dir, run_id)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def payer(run: AgentRun, fail_after_tools: bool = False) -> Agent[AgentRun, str | DeferredToolRequests]:
    """Proposes two payments at once, each needing approval, then reports what each tool call returned.

    With `fail_after_tools`, its first call after the tools ran fails, as an unreachable model does.
    """

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        bump(run.data_dir, run.run_id, "model")
        returns = tool_returns(messages)
        if not returns:
            return ModelResponse(parts=[ToolCallPart("pay", args, tool_call_id=cid) for cid, args in PROPOSED.items()])
        if fail_after_tools and bump(run.data_dir, run.run_id, "failed") == 1:
            raise ConnectionError("the model is unreachable")
        return ModelResponse(parts=[TextPart("; ".join(f"{p.tool_call_id}: {p.content}" for p in returns))])

    payer_agent: Agent[AgentRun, str | DeferredToolRequests] = Agent(
        FunctionModel(model), deps_type=AgentRun, output_type=[str, DeferredToolRequests]
    )

    @payer_agent.tool(requires_approval=True)
    def pay(ctx: RunContext[AgentRun], to: str, amount: int) -> str:
        """Pay someone."""
        bump(ctx.deps.data_dir, ctx.deps.run_id, f"pay.{to}")
        path = payments_path(ctx.deps.data_dir, ctx.deps.run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as fh:
            fh.write(json.dumps({"to": to, "amount": amount}) + "\n")
        return f"paid {amount} to {to}"

    return payer_agent


@agent("t-pai-pay", description="A Pydantic AI agent proposing two payments that need approval")
def pay_agent(run: AgentRun, text: str) -> str:
    executions = bump(run.data_dir, run.run_id, "exec")
    if params(text).get("hang_on_resume") and executions == 2:
        bump(run.data_dir, run.run_id, "hung")
        time.sleep(120)  # killed here, after the answers and before the agent resumes
    return str(run_agent(run, payer(run, bool(params(text).get("fail_after_tools"))), "pay alice and bob", deps=run))


ADDRESS = ToolDefinition(
    name="shipping_address",
    description="Where to ship the order",
    parameters_json_schema={
        "type": "object",
        "properties": {"street": {"type": "string"}, "city": {"type": "string"}, "express": {"type": "boolean"}},
        "required": ["street", "city", "express"],
    },
)


@agent("t-pai-external", description="A Pydantic AI agent with an external tool a person completes")
def external_agent(run: AgentRun, text: str) -> str:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        bump(run.data_dir, run.run_id, "model")
        returns = tool_returns(messages)
        if not returns:
            args = {"street": "1 Main St", "city": "Springfield", "express": False}
            return ModelResponse(parts=[ToolCallPart("shipping_address", args, tool_call_id="addr")])
        return ModelResponse(parts=[TextPart(f"shipping to {returns[0].content}")])

    shop: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(model), output_type=[str, DeferredToolRequests], toolsets=[ExternalToolset([ADDRESS])]
    )
    return str(run_agent(run, shop, "ship my order"))


@agent("t-pai-refused", description="A Pydantic AI agent whose model refuses the request")
def refused_agent(run: AgentRun, text: str) -> str:
    bump(run.data_dir, run.run_id, "exec")

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelHTTPError(401, "standin-model", {"error": {"message": "bad key"}})

    return str(run_agent(run, Agent(FunctionModel(model)), "hello"))


EARLIER_RECORD = "recorded by an earlier version"
"""A tool result an earlier version recorded under the call id alone, before its worker stopped."""


@agent("t-pai-same-id", description="A Pydantic AI agent whose model numbers tool call ids per response")
def same_id_agent(run: AgentRun, text: str) -> str:
    if params(text).get("earlier_record"):  # the journal an earlier version's worker left mid-step
        run.step("pydantic_ai:1:tool:call_0", lambda: {"result": EARLIER_RECORD})

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        bump(run.data_dir, run.run_id, "model")
        returns = tool_returns(messages)
        if len(returns) < 2:  # `call_0` every turn, as a server numbering the calls of each response does
            query = "ab"[len(returns)]
            return ModelResponse(parts=[ToolCallPart("lookup", {"q": query}, tool_call_id="call_0")])
        return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returns))])

    looker: Agent[AgentRun, str | DeferredToolRequests] = Agent(
        FunctionModel(model), deps_type=AgentRun, output_type=[str, DeferredToolRequests]
    )

    @looker.tool
    def lookup(ctx: RunContext[AgentRun], q: str) -> str:
        """Look something up."""
        bump(ctx.deps.data_dir, ctx.deps.run_id, f"lookup.{q}")
        return f"result for {q}"

    return str(run_agent(run, looker, "look up a, then b", deps=run))


VPN_LOGIN = ToolDefinition(
    name="vpn_login",
    description="The person's VPN one-time code",
    parameters_json_schema={
        "type": "object",
        "properties": {"code": {"type": "string", "format": "password", "writeOnly": True}},
        "required": ["code"],
    },
)


def seen_path(data_dir: Path, run_id: str) -> Path:
    """Every message history the model was sent for `run_id`, one JSON line per model call."""
    return data_dir / "pai-seen" / f"{run_id}.jsonl"


def used_path(data_dir: Path, run_id: str) -> Path:
    """The code `connect` logged in with, as the agent's own code read it from the run."""
    return data_dir / "pai-used" / f"{run_id}.txt"


@agent("t-pai-secret", description="A Pydantic AI agent whose external tool asks a person for a one-time code")
def secret_agent(run: AgentRun, text: str) -> str:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        path = seen_path(run.data_dir, run.run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as fh:
            fh.write(ModelMessagesTypeAdapter.dump_json(messages) + b"\n")
        returns = tool_returns(messages)
        if not returns:
            return ModelResponse(parts=[ToolCallPart("vpn_login", {}, tool_call_id="login")])
        if len(returns) == 1:
            return ModelResponse(parts=[ToolCallPart("connect", {}, tool_call_id="connect")])
        return ModelResponse(parts=[TextPart(" | ".join(f"{p.tool_name}: {p.content}" for p in returns))])

    vpn: Agent[AgentRun, str | DeferredToolRequests] = Agent(
        FunctionModel(model),
        deps_type=AgentRun,
        output_type=[str, DeferredToolRequests],
        toolsets=[ExternalToolset([VPN_LOGIN])],
    )

    @vpn.tool
    def connect(ctx: RunContext[AgentRun]) -> str:
        """Connect to the VPN with the code the person gave."""
        bump(ctx.deps.data_dir, ctx.deps.run_id, "connect")
        path = used_path(ctx.deps.data_dir, ctx.deps.run_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(ctx.deps.secret("code"))
        return "connected"

    return str(run_agent(run, vpn, "connect me to the VPN", deps=run))


# ---- approvals past the form's limit (nine arguments) and the binding's (a 5,000-character one) -------
WIDE = {
    name: f"{name} as proposed"
    for name in ["title", "owner", "team", "priority", "component", "version", "region", "summary", "due"]
}
"""Nine arguments: one more than an approval can make editable."""
LONG_TEXT = "".join(f"line {n:04d}\n" for n in range(500))
"""5,000 characters: more than the 2,000 an approval binds whole."""


def effects_path(data_dir: Path, run_id: str) -> Path:
    return data_dir / "pai-effects" / f"{run_id}.jsonl"


def effects(data_dir: Path, run_id: str) -> list[dict[str, Any]]:
    """The arguments each run of `file_ticket` or `save_notes` had, in order: one line per run."""
    path = effects_path(data_dir, run_id)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _effect(run: AgentRun, args: dict[str, Any]) -> None:
    path = effects_path(run.data_dir, run.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(args) + "\n")


@agent("t-pai-wide", description="A Pydantic AI agent proposing a nine-argument call that needs approval")
def wide_agent(run: AgentRun, text: str) -> str:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages)
        if not returns:
            return ModelResponse(parts=[ToolCallPart("file_ticket", WIDE, tool_call_id="ticket")])
        return ModelResponse(parts=[TextPart(str(returns[0].content))])

    filer: Agent[AgentRun, str | DeferredToolRequests] = Agent(
        FunctionModel(model), deps_type=AgentRun, output_type=[str, DeferredToolRequests]
    )

    @filer.tool(requires_approval=True)
    def file_ticket(
        ctx: RunContext[AgentRun],
        title: str,
        owner: str,
        team: str,
        priority: str,
        component: str,
        version: str,
        region: str,
        summary: str,
        due: str,
    ) -> str:
        """File a ticket."""
        _effect(ctx.deps, {name: value for name, value in locals().items() if name in WIDE})
        return f"filed {title}"

    return str(run_agent(run, filer, "file the ticket", deps=run))


@agent("t-pai-long", description="A Pydantic AI agent saving 5,000 characters of notes, once or twice at once")
def long_agent(run: AgentRun, text: str) -> str:
    calls = int(params(text).get("calls", 1))

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = tool_returns(messages)
        if not returns:
            parts = [
                ToolCallPart("save_notes", {"path": f"notes-{n}.txt", "text": LONG_TEXT}, tool_call_id=f"save-{n}")
                for n in range(calls)
            ]
            return ModelResponse(parts=parts)
        return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returns))])

    saver: Agent[AgentRun, str | DeferredToolRequests] = Agent(
        FunctionModel(model), deps_type=AgentRun, output_type=[str, DeferredToolRequests]
    )

    @saver.tool(requires_approval=True)
    def save_notes(ctx: RunContext[AgentRun], path: str, text: str) -> str:
        """Save notes to a file."""
        _effect(ctx.deps, {"path": path, "text": text})
        return f"saved {len(text)} characters to {path}"

    return str(run_agent(run, saver, "save the notes", deps=run))
