"""Pydantic AI agents on Parley: deferred tool calls become questions, answers resume the agent.

`run_agent(run, agent, prompt)` runs the agent with `DeferredToolRequests` among its output
types. It runs on the framework driver (`workers.integrations.driver`). Each run of the agent is
one driver step (`pydantic_ai:<n>`), up to an output or deferred tool calls. The step holds the
message history (`ModelMessagesTypeAdapter`). So a replay after an answer repeats no model call
and no tool. Inside such a run, every model response and tool result is a step too. These are
`<step>:model:<n>` and `<step>:model:<n>:tool:<call id>`, a tool result under the response that
made the call (0: a deferred call the run resumes). They are read back with `run.recorded`. So a
worker dying halfway repeats neither when the run is taken over.

This module keeps the two translations. Deferred calls become pending questions, asked at once:
- A call needing approval (`approve.<n>`) is `run.approve`'s request. The tool's JSON schema
  types the editable args. Its `EDITABLE` metadata may name the only ones. Args too long to
  bind whole are shown in part and bound by digest, never editable. An approval goes back as
  `ToolApproved`, with `override_args` when edited: the model's args with the edits applied. A
  rejection goes back as `ToolDenied`, carrying the reason the model reads.
- An external call (`call.<n>`) is a form the model fills in and a person completes. The tool's
  parameters are the items, and the model's args their defaults. The answers are the tool's
  result. A secret item's answer is `SECRET_PLACEHOLDER` there. The agent's code reads the value
  with `run.secret(item_id)`.

Some failures fail the run at once (`AgentError`). These are a model refusing the request (a bad
key, an unknown model), or an agent set up wrong. A network failure or a 5xx is an ordinary
error, so the run is retried.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from contextlib import suppress
from functools import reduce
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelHTTPError, UserError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, ToolCallPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ExternalToolset, FunctionToolset
from pydantic_core import to_jsonable_python

from workers.agent_run import ABSENT, AgentRun
from workers.exceptions import AgentError
from workers.integrations.driver import Keys, Pending, Replies, Reply, drive
from workers.interaction import Decision, Item, ItemType, Request
from workers.interaction.approval import approval_request, approved_args
from workers.interaction.schema_items import readable, schema_items
from workers.interaction.tools import SECRET_PLACEHOLDER
from workers.llm import LLMConfig, llm_config_from_env
from workers.logs import Log, redacted

ANSWER_ID = "answer"
"""The one item of an external call whose parameters no item can ask for."""
NO_REASON = "A person rejected this call and gave no reason."
EDITABLE = "parley_editable"
"""A tool's metadata key naming the args an approver may edit (`metadata={EDITABLE: ["amount"]}`); all by default."""

_RETRYABLE = {408, 409, 425, 429}
"""Client errors a later attempt may not meet; any other refusal fails the run at once."""
_RESPONSE: TypeAdapter[ModelResponse] = TypeAdapter(ModelResponse)
_DEFERRED: TypeAdapter[DeferredToolRequests] = TypeAdapter(DeferredToolRequests)


class _Journal(AbstractCapability[Any]):
    """Records each model response and tool result of an agent run as a step, for replay."""

    def __init__(self, run: AgentRun, prefix: str) -> None:
        self._run, self._prefix, self._requests = run, prefix, 0
        self._called: set[str] = set()  # the tool call ids this run of the agent has met

    async def wrap_model_request(self, ctx: RunContext[Any], *, request_context: Any, handler: Any) -> ModelResponse:
        self._requests += 1
        key = f"{self._prefix}:model:{self._requests}"
        recorded = self._run.recorded(key, branch=True)
        if recorded is not ABSENT:
            return _RESPONSE.validate_python(recorded)
        response: ModelResponse = await handler(request_context)
        self._run.step(key, lambda: _RESPONSE.dump_python(response, mode="json"))
        return response

    async def wrap_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, handler: Any
    ) -> Any:
        # Keyed by the response that made the call too: some models number call ids per response
        # (`call_0` every turn), so an id alone may name an earlier call with another result.
        key = f"{self._prefix}:model:{self._requests}:tool:{call.tool_call_id}"
        recorded = self._run.recorded(key, branch=True)
        if recorded is ABSENT and call.tool_call_id not in self._called:
            # An earlier version keyed a result by call id alone. It ran only an id's first call of a
            # run of the agent, so that call alone may be its record. A run it stopped mid-way then
            # repeats no tool. A later call with that id was never run, and runs now.
            recorded = self._run.recorded(f"{self._prefix}:tool:{call.tool_call_id}")
        self._called.add(call.tool_call_id)
        if recorded is not ABSENT:
            return recorded["result"]
        result = await handler(args)
        self._run.step(key, lambda: {"result": to_jsonable_python(result)})
        return result


def tool_definitions(agent: Agent[Any, Any]) -> dict[str, ToolDefinition]:
    """The agent's own function and external tools by name.

    They give the tools' JSON schemas and descriptions.
    """
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
    """The agent's output types other than `DeferredToolRequests`, and whether it declares that."""
    spec = agent.output_type
    types = list(spec) if isinstance(spec, Sequence) and not isinstance(spec, str) else [spec]
    others = [t for t in types if t is not DeferredToolRequests]
    return others, len(others) < len(types)


def _decoded(agent: Agent[Any, Any], value: Any) -> Any:
    """A recorded output as the agent's output type, where pydantic can read it.

    Otherwise it is returned as recorded.
    """
    types, _ = _output_types(agent)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(reduce(operator.or_, types))
        return adapter.validate_python(value)
    except (PydanticSchemaGenerationError, ValidationError, TypeError):
        return value


def _call_request(call: ToolCallPart, tool: ToolDefinition | None) -> Request:
    """An external call as a form: tool parameters as items, model args as defaults."""
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


def _pending(deferred: DeferredToolRequests, tools: dict[str, ToolDefinition]) -> list[Pending]:
    """The deferred calls as pending questions: `approve.<n>` approvals, then `call.<n>` forms."""
    pending: list[Pending] = []
    for n, call in enumerate(deferred.approvals, 1):
        tool = tools.get(call.tool_name)
        schema = tool.parameters_json_schema if tool is not None else None
        editable = (tool.metadata or {}).get(EDITABLE, True) if tool is not None else True
        request = approval_request(call.tool_name, call.args_as_dict(), schema=schema, editable=editable, in_part=True)
        assert request.approval is not None
        pending.append(Pending(f"approve.{n}", request, request.approval.args))  # bound to the args as shown
    for n, call in enumerate(deferred.calls, 1):
        pending.append(Pending(f"call.{n}", _call_request(call, tools.get(call.tool_name)), call.args_as_dict()))
    return pending


def _results(deferred: DeferredToolRequests, pending: list[Pending], replies: Replies) -> DeferredToolResults:
    """The replies as the results Pydantic AI resumes with, by tool call id."""
    asked = {p.id: p.request for p in pending}
    results = DeferredToolResults()
    for n, call in enumerate(deferred.approvals, 1):
        decision = replies[f"approve.{n}"]
        assert isinstance(decision, Decision)  # the driver reads an approval back as one
        if decision.approved:
            edited = approved_args(decision, call.args_as_dict()) if decision.edited else None
            results.approvals[call.tool_call_id] = ToolApproved(override_args=edited)
        else:
            results.approvals[call.tool_call_id] = ToolDenied(message=decision.reason or NO_REASON)
    for n, call in enumerate(deferred.calls, 1):
        results.calls[call.tool_call_id] = _hidden(asked[f"call.{n}"], replies[f"call.{n}"])
    return results


def _hidden(request: Request, reply: Reply) -> Reply:
    """An external call's answers as the model reads them, each secret given as `SECRET_PLACEHOLDER`.

    So the value is in no model request and no journal entry. The agent's code gets it with
    `run.secret(item_id)`, as `workers.llm`'s tools do.
    """
    if not isinstance(reply, dict):
        return reply
    secret = {item.id for item in request.items if item.is_secret}
    return {k: SECRET_PLACEHOLDER if k in secret and isinstance(v, str) and v else v for k, v in reply.items()}


Resume = tuple[list[ModelMessage], DeferredToolResults]
"""What the agent resumes with: its message history and the deferred calls' results."""


class _Agent:
    """A Pydantic AI agent as the driver calls it: one run per call, deferred calls as pauses."""

    def __init__(self, run: AgentRun, agent: Agent[Any, Any], prompt: str, deps: Any, model: Any) -> None:
        self._run, self._agent, self._prompt, self._deps, self._model = run, agent, prompt, deps, model
        types, declared = _output_types(agent)
        self._output_type = None if declared else [*types, DeferredToolRequests]
        self._tools = tool_definitions(agent)
        self._live: dict[str, Any] = {}  # outputs of the calls this execution made, by step
        self._log = Log("parley.pydantic_ai", run_id=run.run_id)

    def call(self, step: str, resume: Resume | None) -> dict[str, Any]:
        """One agent run, up to an output or deferred calls, as the step records it."""
        history, results = resume if resume is not None else (None, None)
        try:
            result = self._agent.run_sync(
                self._prompt if history is None else None,
                output_type=self._output_type,
                message_history=history,
                deferred_tool_results=results,
                deps=self._deps,
                model=self._model,
                capabilities=[_Journal(self._run, step)],
            )
        except UserError as exc:  # the agent is set up wrong: a retry cannot help
            raise AgentError(f"the Pydantic AI agent cannot run: {exc}") from exc
        except ModelHTTPError as exc:
            if exc.status_code < 500 and exc.status_code not in _RETRYABLE:
                why = _said(exc.body)
                refused = f"the model refused the request (HTTP {exc.status_code}, model {exc.model_name})"
                raise AgentError(f"{refused}: {why}" if why else refused) from exc
            raise
        self._live[step] = result.output
        deferred = result.output if isinstance(result.output, DeferredToolRequests) else None
        return {
            "messages": ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json"),
            "deferred": _DEFERRED.dump_python(deferred, mode="json") if deferred is not None else None,
            "output": None if deferred is not None else to_jsonable_python(result.output),
        }

    def pauses(self, step: str, outcome: dict[str, Any]) -> list[Pending] | None:
        if outcome["deferred"] is None:
            self._log.info("agent finished", step=step, replayed=step not in self._live)
            return None
        deferred = _DEFERRED.validate_python(outcome["deferred"])
        said = {"approvals": len(deferred.approvals), "calls": len(deferred.calls)}
        self._log.info("agent deferred tool calls", step=step, **said)
        return _pending(deferred, self._tools)

    def resume(self, outcome: dict[str, Any], pending: list[Pending], replies: Replies) -> Resume:
        history = ModelMessagesTypeAdapter.validate_python(outcome["messages"])
        return history, _results(_DEFERRED.validate_python(outcome["deferred"]), pending, replies)

    def output(self, step: str, outcome: dict[str, Any]) -> Any:
        return self._live[step] if step in self._live else _decoded(self._agent, outcome["output"])


def _said(body: object) -> str:
    """The clipped message of an OpenAI-style error body, or "".

    The body looks like `{"error": {"message": …}}`.
    """
    error = body.get("error", body) if isinstance(body, dict) else body
    message = error.get("message") if isinstance(error, dict) else error
    return redacted(str(message))[:300] if isinstance(message, str) else ""


def parley_model(config: LLMConfig | None = None) -> OpenAIChatModel:
    """The model `PARLEY_LLM_*` names, as the shipped agents use it.

    It is read when called, as an agent runs.
    """
    config = config or llm_config_from_env()  # LLMNotConfigured, an AgentError: the run fails, saying what to set
    key = config.api_key.get_secret_value() if config.api_key is not None else "none"  # the client insists on one
    return OpenAIChatModel(config.model, provider=OpenAIProvider(base_url=config.base_url, api_key=key))


def run_agent(
    run: AgentRun, agent: Agent[Any, Any], prompt: str, *, deps: Any = None, key: str = "pydantic_ai", model: Any = None
) -> Any:
    """Run `agent` on `prompt` to an output, asking people for deferred tool calls.

    Returns the output. `key` names the steps and questions. Give each `run_agent` call of one agent
    run its own. `model` is used when the agent names none (`parley_model()`: PARLEY_LLM_*). Raises
    `TooManyRounds` when the agent still defers calls after `MAX_ROUNDS` rounds of answers.
    """
    driven = _Agent(run, agent, prompt, deps, model)
    return drive(run, key, driven, what="the Pydantic AI agent", earlier=Keys(key, sep="."))  # `pydantic_ai.1`
