"""OpenAI Agents SDK agents for the tests, on a scripted `Model` written for them (no network).

`ScriptedModel` implements the SDK's `Model` interface. Its reply is a function of what it is
sent, never of an in-memory count, so a replay in another process would get the same reply;
each call is counted in a file (`tests/effect_counters.py`) and what it was sent is kept in
`<run>.model-inputs.jsonl` beside the counts, so a test reads both from outside every process.

`oa-two` (params as JSON at the start of its text, like `slack_agents`): the model calls
`delete_file` and `email_owner` in one reply, both needing approval; once it has their
results it ends with a text quoting them. Each tool counts its runs (`tool-<name>`); with
`"gate"` each tool first counts `reached` and waits for that gate file, so a test can kill
the worker after the answers and before any tool acted. `"then": path` adds a second round, one
more `delete_file`; `"look": true` adds one calling `list_files`, which needs no approval;
`"flaky": true` makes the model fail once, as a lost connection, when it has every result;
`"in_loop": true` calls `run_agent` from inside a running event loop.

`oa-long`: the model calls `save_notes` with 5,000 characters of text (`LONG_TEXT`), once or
(`"calls": 2`) twice in one reply, each needing approval. Each save appends the arguments it ran
with to `<run>.saved.jsonl` (`saved`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import Agent, FunctionTool, ModelResponse, Usage, function_tool
from agents.models.interface import Model
from effect_counters import bump, count, counter_path
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
from slack_agents import params

from workers import agent
from workers.agent_run import AgentRun
from workers.integrations.openai_agents import run_agent

MODEL_CALLS = "model"
MODEL_FAILURES = "model-failed"


def model_inputs(data_dir: Path, run_id: str) -> list[list[dict[str, Any]]]:
    """What the scripted model was sent, one list of input items per call, in order."""
    path = counter_path(data_dir, run_id, "model-inputs.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tool_call(name: str, args: dict[str, Any], call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", name=name, arguments=json.dumps(args), call_id=call_id, id=f"fc_{call_id}"
    )


def message(text: str) -> ResponseOutputMessage:
    content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
    return ResponseOutputMessage(type="message", id="msg_1", role="assistant", status="completed", content=content)


def tool_outputs(items: list[dict[str, Any]]) -> dict[str, str]:
    """The tool results in an input, by call id."""
    return {i["call_id"]: str(i["output"]) for i in items if i.get("type") == "function_call_output"}


class ScriptedModel(Model):
    """Asks for each round of `rounds` in turn (a round: tool calls made in one reply), the next once
    every call of the one before has a result; then ends quoting every result by call id.

    `flaky`: the first request that has every result fails with a `ConnectionError` (counted in
    `MODEL_FAILURES`), as a model endpoint out of reach; the SDK does not catch it."""

    def __init__(
        self, data_dir: Path, run_id: str, rounds: list[list[ResponseFunctionToolCall]], *, flaky: bool = False
    ) -> None:
        self.data_dir, self.run_id, self.rounds, self.flaky = data_dir, run_id, rounds, flaky

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else [dict(i) for i in input]
        bump(self.data_dir, self.run_id, MODEL_CALLS)
        with counter_path(self.data_dir, self.run_id, "model-inputs.jsonl").open("a") as f:
            f.write(json.dumps(items, default=str) + "\n")
        done = tool_outputs(items)
        pending = next((r for r in self.rounds if any(c.call_id not in done for c in r)), None)
        if pending is None and self.flaky and not count(self.data_dir, self.run_id, MODEL_FAILURES):
            bump(self.data_dir, self.run_id, MODEL_FAILURES)
            raise ConnectionError("the model endpoint is unreachable (a transient failure)")
        if pending is not None:
            output: list[Any] = list(pending)
        else:
            output = [message("; ".join(f"{call}: {text}" for call, text in sorted(done.items())))]
        usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
        return ModelResponse(output=output, usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run the agent without streaming")


def wait_for_gate(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {path} never opened")
        time.sleep(0.05)


def counted_tools(run: AgentRun, gate: str | None) -> list[FunctionTool]:
    """`delete_file` and `email_owner`, both needing approval, and `list_files`, needing none; each
    counts its runs under `tool-<name>`."""

    def act(name: str, what: str) -> str:
        if gate:
            bump(run.data_dir, run.run_id, "reached")
            wait_for_gate(run.data_dir / "gates" / gate)
        bump(run.data_dir, run.run_id, f"tool-{name}")
        return what

    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete one file."""
        return act("delete_file", f"deleted {path}")

    @function_tool(needs_approval=True)
    def email_owner(address: str) -> str:
        """Email the owner of the files."""
        return act("email_owner", f"emailed {address}")

    @function_tool
    def list_files() -> str:
        """List the files."""
        bump(run.data_dir, run.run_id, "tool-list_files")
        return "old.log, notes.txt"

    return [delete_file, email_owner, list_files]


@agent("oa-two", description="An OpenAI Agents SDK agent whose model calls two tools that need approval at once")
def two_tools(run: AgentRun, text: str) -> str:
    p = params(text)
    bump(run.data_dir, run.run_id, "exec")
    calls = [
        tool_call("delete_file", {"path": p.get("path", "old.log")}, "call_delete"),
        tool_call("email_owner", {"address": p.get("address", "owner@example.com")}, "call_email"),
    ]
    rounds = [calls[: p.get("calls", 2)]]
    if p.get("then"):  # a second round, asked once the first one's results are in
        rounds.append([tool_call("delete_file", {"path": p["then"]}, "call_then")])
    if p.get("look"):
        rounds.append([tool_call("list_files", {}, "call_list")])
    model = ScriptedModel(run.data_dir, run.run_id, rounds, flaky=p.get("flaky", False))
    sdk_agent = Agent(name="cleanup", instructions="Tidy up.", model=model, tools=counted_tools(run, p.get("gate")))

    def go() -> Any:
        return run_agent(run, sdk_agent, "tidy up", assignees=p.get("assignees", []))

    if p.get("in_loop"):  # called from async code: run_agent runs the SDK on a thread of its own

        async def inside() -> Any:
            return go()

        return str(asyncio.run(inside()))
    return str(go())


LONG_TEXT = "".join(f"line {n:04d}\n" for n in range(500))
"""5,000 characters: more than the 2,000 an approval binds whole."""


def saved(data_dir: Path, run_id: str) -> list[dict[str, Any]]:
    """The arguments each run of `save_notes` had, in order: one line per run."""
    path = counter_path(data_dir, run_id, "saved.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@agent("oa-long", description="An OpenAI Agents SDK agent saving 5,000 characters of notes, once or twice at once")
def long_notes(run: AgentRun, text: str) -> str:
    p = params(text)

    @function_tool(needs_approval=True)
    def save_notes(path: str, text: str) -> str:
        """Save notes to a file."""
        out = counter_path(run.data_dir, run.run_id, "saved.jsonl")
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("a") as f:
            f.write(json.dumps({"path": path, "text": text}) + "\n")
        return f"saved {len(text)} characters to {path}"

    calls = [tool_call("save_notes", {"path": f"notes-{n}.txt", "text": LONG_TEXT}, f"call_{n}") for n in range(2)]
    model = ScriptedModel(run.data_dir, run.run_id, [calls[: p.get("calls", 1)]])
    sdk_agent = Agent(name="notes", instructions="Save the notes.", model=model, tools=[save_notes])
    return str(run_agent(run, sdk_agent, "save the notes"))
