"""Pydantic AI agents on Parley: deferred tool calls become one `ask_all`, and the answers resume the agent.

`run_agent(run, agent, prompt)` runs the agent with `DeferredToolRequests` among its output types.
Each run of the agent, up to an output or to deferred tool calls, is one `run.step` holding the
message history (`ModelMessagesTypeAdapter`), so a replay after an answer repeats no model call and
no tool. Inside such a run every model response and every tool result is a step of its own too: a
worker that dies halfway through one repeats neither when the run is taken over.

Deferred calls are asked all at once, so the run parks once and resumes once:
- a call needing approval is `run.approve`'s request: the tool's JSON schema types the editable
  args, and its `EDITABLE` metadata may name the only ones. An approval goes back as
  `ToolApproved`, with `override_args` when edited, and a rejection as `ToolDenied` carrying the
  reason, which the model reads;
- an external call is a form the model fills in and a person completes: the tool's parameters are
  the items, the model's args their defaults, and the answers the tool's result.

A model that refuses the request (a bad key, an unknown model) or an agent set up wrong fails the
run at once (`AgentError`); a network failure or a 5xx is an ordinary error, so the run is retried.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from contextlib import suppress
from functools import partial, reduce
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelHTTPError, UserError
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ExternalToolset, FunctionToolset
from pydantic_core import to_jsonable_python

from workers.agent_run import AgentRun
from workers.exceptions import AgentError, ParleyError
from workers.interaction import Item, ItemType, Request
from workers.interaction.approval import approval_request, decision_of
from workers.interaction.schema_items import readable, schema_items
from workers.llm import LLMConfig, llm_config_from_env
from workers.logs import Log, redacted

MAX_RESUMES = 20
"""Times one `run_agent` resumes the agent after answers before it fails the run."""
ANSWER_ID = "answer"
"""The one item of an external call whose parameters no item can ask for."""
NO_REASON = "A person rejected this call and gave no reason."
EDITABLE = "parley_editable"
"""A tool's metadata key naming the args an approver may edit (`metadata={EDITABLE: ["amount"]}`); all by default."""

_RETRYABLE = {408, 409, 425, 429}
"""Client errors a later attempt may not meet; any other refusal fails the run at once."""
_RESPONSE: TypeAdapter[ModelResponse] = TypeAdapter(ModelResponse)
_DEFERRED: TypeAdapter[DeferredToolRequests] = TypeAdapter(DeferredToolRequests)


class _Absent(ParleyError):
    """Raised inside `run.step` to read a step without running anything: nothing is recorded."""


def _recorded(run: AgentRun, key: str) -> Any:
    """The value step `key` recorded, or None when it has not run."""

    def absent() -> Any:
        raise _Absent

    try:
        return run.step(key, absent)
    except _Absent:
        return None


class _Journal(AbstractCapability[Any]):
    """Records each model response and tool result of one agent run as a step, and replays them."""

    def __init__(self, run: AgentRun, prefix: str) -> None:
        self._run, self._prefix, self._requests = run, prefix, 0

    async def wrap_model_request(self, ctx: RunContext[Any], *, request_context: Any, handler: Any) -> ModelResponse:
        self._requests += 1
        key = f"{self._prefix}.model.{self._requests}"
        recorded = _recorded(self._run, key)
        if recorded is not None:
            return _RESPONSE.validate_python(recorded)
        response: ModelResponse = await handler(request_context)
        self._run.step(key, lambda: _RESPONSE.dump_python(response, mode="json"))
        return response

    async def wrap_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, handler: Any
    ) -> Any:
        key = f"{self._prefix}.tool.{call.tool_call_id}"
        recorded = _recorded(self._run, key)
        if recorded is not None:
            return recorded["result"]
        result = await handler(args)
        self._run.step(key, lambda: {"result": to_jsonable_python(result)})
        return result


def tool_definitions(agent: Agent[Any, Any]) -> dict[str, ToolDefinition]:
    """The agent's own function and external tools by name, for their JSON schemas and descriptions."""
    found: dict[str, ToolDefinition] = {}

    def visit(toolset: AbstractToolset[Any]) -> None:
        if isinstance(toolset, FunctionToolset):
            found.update({name: tool.tool_def for name, tool in toolset.tools.items()})
        elif isinstance(toolset, ExternalToolset):
            found.update({d.name: d for d in toolset.tool_defs})

    for toolset in agent.toolsets:
        toolset.apply(visit)
    return found


def _output_types(agent: Agent[Any, Any]) -> tuple[list[Any], bool]:
    """The agent's output types other than `DeferredToolRequests`, and whether it declares that one."""
    spec = agent.output_type
    types = list(spec) if isinstance(spec, Sequence) and not isinstance(spec, str) else [spec]
    others = [t for t in types if t is not DeferredToolRequests]
    return others, len(others) < len(types)


def _decoded(agent: Agent[Any, Any], value: Any) -> Any:
    """A recorded output as the agent's output type, where pydantic can read that type; else as recorded."""
    types, _ = _output_types(agent)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(reduce(operator.or_, types))
        return adapter.validate_python(value)
    except (PydanticSchemaGenerationError, ValidationError, TypeError):
        return value


def _call_request(call: ToolCallPart, tool: ToolDefinition | None) -> Request:
    """An external call as a form: the tool's parameters as items, the model's args as their defaults."""
    args = call.args_as_dict()
    schema = tool.parameters_json_schema if tool is not None else {}
    items: list[Item] = []
    for name, item in schema_items(schema).items():
        if item is None:
            continue
        if args.get(name) is not None:
            with suppress(ValidationError):  # a value this item does not take is asked without it
                item = item.model_validate({**item.model_dump(), "default": args[name]})
        items.append(item)
    if not items:
        items = [Item(id=ANSWER_ID, text=readable(call.tool_name), type=ItemType.FREE_TEXT, multiline=True)]
    description = (tool.description if tool is not None else None) or f"{readable(call.tool_name)}: your answer"
    return Request(reason=description[:150], items=items)


class _Asked:
    """The questions for one set of deferred calls, each under its ask key, and how to read their answers."""

    def __init__(self, prefix: str, deferred: DeferredToolRequests, tools: dict[str, ToolDefinition]) -> None:
        self.requests: dict[str, Request] = {}
        self.context: dict[str, Any] = {}
        self._approvals: dict[str, str] = {}  # ask key -> tool call id
        self._calls: dict[str, str] = {}
        for n, call in enumerate(deferred.approvals, 1):
            key, tool = f"{prefix}.approve.{n}", tools.get(call.tool_name)
            schema = tool.parameters_json_schema if tool is not None else None
            editable = (tool.metadata or {}).get(EDITABLE, True) if tool is not None else True
            self.requests[key] = approval_request(call.tool_name, call.args_as_dict(), schema=schema, editable=editable)
            self.context[key], self._approvals[key] = call.args_as_dict(), call.tool_call_id
        for n, call in enumerate(deferred.calls, 1):
            key = f"{prefix}.call.{n}"
            self.requests[key] = _call_request(call, tools.get(call.tool_name))
            self.context[key], self._calls[key] = call.args_as_dict(), call.tool_call_id

    def results(self, answers: dict[str, dict[str, Any]]) -> DeferredToolResults:
        """The answers as the results Pydantic AI resumes with."""
        results = DeferredToolResults()
        for key, call_id in self._approvals.items():
            decision = decision_of(self.requests[key], answers[key])
            if decision.approved:
                results.approvals[call_id] = ToolApproved(override_args=decision.args if decision.edited else None)
            else:
                results.approvals[call_id] = ToolDenied(message=decision.reason or NO_REASON)
        for key, call_id in self._calls.items():
            results.calls[call_id] = answers[key]
        return results


def _segment(
    run: AgentRun,
    agent: Agent[Any, Any],
    prefix: str,
    live: list[Any],
    prompt: str,
    history: list[Any] | None,
    results: DeferredToolResults | None,
    output_type: Any,
    deps: Any,
    model: Any = None,
) -> dict[str, Any]:
    """One run of the agent, up to an output or deferred calls, as the step records it; `live` gets the output."""
    try:
        result = agent.run_sync(
            prompt if history is None else None,
            output_type=output_type,
            message_history=history,
            deferred_tool_results=results,
            deps=deps,
            model=model,
            capabilities=[_Journal(run, prefix)],
        )
    except UserError as exc:  # the agent is set up wrong: a retry cannot help
        raise AgentError(f"the Pydantic AI agent cannot run: {exc}") from exc
    except ModelHTTPError as exc:
        if exc.status_code < 500 and exc.status_code not in _RETRYABLE:
            why = _said(exc.body)
            refused = f"the model refused the request (HTTP {exc.status_code}, model {exc.model_name})"
            raise AgentError(f"{refused}: {why}" if why else refused) from exc
        raise
    live.append(result.output)
    deferred = result.output if isinstance(result.output, DeferredToolRequests) else None
    return {
        "messages": ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json"),
        "deferred": _DEFERRED.dump_python(deferred, mode="json") if deferred is not None else None,
        "output": None if deferred is not None else to_jsonable_python(result.output),
    }


def _said(body: object) -> str:
    """The message of an OpenAI-style error body (`{"error": {"message": …}}`), clipped; empty if none."""
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message") if isinstance(error, dict) else error
    return redacted(str(message))[:300] if isinstance(message, str) else ""


def parley_model(config: LLMConfig | None = None) -> OpenAIChatModel:
    """The model `PARLEY_LLM_*` name, read when called (as an agent runs), as the shipped agents use it."""
    config = config or llm_config_from_env()  # LLMNotConfigured, an AgentError: the run fails, saying what to set
    key = config.api_key.get_secret_value() if config.api_key is not None else "none"  # the client insists on one
    return OpenAIChatModel(config.model, provider=OpenAIProvider(base_url=config.base_url, api_key=key))


def run_agent(
    run: AgentRun, agent: Agent[Any, Any], prompt: str, *, deps: Any = None, key: str = "pydantic_ai", model: Any = None
) -> Any:
    """Run `agent` on `prompt` until it has an output, asking people for its deferred tool calls; return the output.

    `key` names the steps and questions: give each `run_agent` call of one agent run its own.
    `model` is the one to use when the agent names none (`parley_model()`: PARLEY_LLM_*).
    """
    log = Log("parley.pydantic_ai", run_id=run.run_id)
    types, declared = _output_types(agent)
    output_type = None if declared else [*types, DeferredToolRequests]
    tools = tool_definitions(agent)
    history: list[Any] | None = None
    results: DeferredToolResults | None = None
    for n in range(1, MAX_RESUMES + 2):
        prefix, live = f"{key}.{n}", list[Any]()
        step = partial(_segment, run, agent, prefix, live, prompt, history, results, output_type, deps, model)
        record = run.step(prefix, step)
        if record["deferred"] is None:
            log.info("agent finished", step=prefix, replayed=not live)
            return live[0] if live else _decoded(agent, record["output"])
        deferred = _DEFERRED.validate_python(record["deferred"])
        asked = _Asked(prefix, deferred, tools)
        log.info("agent deferred tool calls", step=prefix, approvals=len(deferred.approvals), calls=len(deferred.calls))
        answers = run.ask_all(asked.requests, asked.context)
        history = ModelMessagesTypeAdapter.validate_python(record["messages"])
        results = asked.results(answers)
    raise AgentError(f"the agent deferred tool calls {MAX_RESUMES + 1} times without an output; giving up")
