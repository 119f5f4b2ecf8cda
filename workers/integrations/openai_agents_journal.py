"""Recording an OpenAI Agents SDK run's model responses and tool results, for replay.

`Journal` wraps one `Runner.run` of `openai_agents.run_agent`. Its copies of the agent and its
handoffs record through it. So do the run config's model and provider. Each model response is a
step: `<step>:model:<n>`. Each function tool's result is one too: `<step>:model:<n>:tool:<call id>`,
under the response that made the call. A replay reads them back, so no model call or tool runs
again.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from agents import Agent, FunctionTool, ModelResponse, RunConfig
from agents.models.interface import Model, ModelProvider
from agents.retry import ModelRetryAdvice, ModelRetryAdviceRequest
from agents.tool_context import ToolContext
from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python

from workers.agent_run import ABSENT, AgentRun

__all__ = ["Journal"]

_RESPONSE: TypeAdapter[ModelResponse] = TypeAdapter(ModelResponse)


class Journal:
    """Records each model response and tool result of one `Runner.run` as a step, for replay."""

    def __init__(self, run: AgentRun, step: str) -> None:
        self._run, self._step, self._responses = run, step, 0

    def agent(self, agent: Agent[Any], copies: dict[int, Agent[Any]] | None = None) -> Agent[Any]:
        """A copy of `agent`, and of the agents it hands off to, whose models and function tools record.

        An agent used as a tool is left as it is: its own run may stop for an approval.
        """
        copies = {} if copies is None else copies
        if id(agent) not in copies:
            clone = copies[id(agent)] = agent.clone()
            clone.tools = [
                self._tool(t) if isinstance(t, FunctionTool) and not getattr(t, "_is_agent_tool", False) else t
                for t in agent.tools
            ]
            clone.handoffs = [self.agent(h, copies) if isinstance(h, Agent) else h for h in agent.handoffs]
            clone.model = _Model(agent.model, self) if isinstance(agent.model, Model) else agent.model
        return copies[id(agent)]

    def config(self, config: RunConfig) -> RunConfig:
        """`config` with its model, and the models its provider names, recording."""
        model = _Model(config.model, self) if isinstance(config.model, Model) else config.model
        return dataclasses.replace(config, model=model, model_provider=_Provider(config.model_provider, self))

    async def response(self, model: Model, *args: Any, **kwargs: Any) -> ModelResponse:
        """The next model response: the recorded one, or the model's, recorded.

        A failed request takes no number, so its retry asks under the same one.
        """
        key = f"{self._step}:model:{self._responses + 1}"
        recorded = self._run.recorded(key, branch=True)
        if recorded is not ABSENT:
            response = _RESPONSE.validate_python(recorded)
        else:
            response = await model.get_response(*args, **kwargs)
            self._run.step(key, lambda: _RESPONSE.dump_python(response, mode="json", by_alias=True, exclude_unset=True))
        self._responses += 1
        return response

    def _tool(self, tool: FunctionTool) -> FunctionTool:
        """A copy of `tool` that records its result, and returns the recorded one on replay."""
        journaled = copy.copy(tool)
        invoke = journaled.on_invoke_tool

        async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> Any:
            # Under the response that made the call (0: one the step resumes): a call id may come again.
            key = f"{self._step}:model:{self._responses}:tool:{ctx.tool_call_id}"
            recorded = self._run.recorded(key, branch=True)
            if recorded is not ABSENT:
                return recorded["result"]
            result = await invoke(ctx, arguments)
            self._run.step(key, lambda: {"result": to_jsonable_python(result, fallback=str)})
            return result

        journaled.on_invoke_tool = on_invoke_tool
        return journaled


class _Model(Model):
    """A model whose responses a `Journal` records."""

    def __init__(self, model: Model, journal: Journal) -> None:
        self._model, self._journal = model, journal

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return await self._journal.response(self._model, *args, **kwargs)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        return self._model.stream_response(*args, **kwargs)

    def get_retry_advice(self, request: ModelRetryAdviceRequest) -> ModelRetryAdvice | None:
        return self._model.get_retry_advice(request)

    async def _cleanup_on_run_end(self, owner: object) -> None:
        await self._model._cleanup_on_run_end(owner)


class _Provider(ModelProvider):
    """A model provider whose models a `Journal` records."""

    def __init__(self, provider: ModelProvider, journal: Journal) -> None:
        self._provider, self._journal = provider, journal

    def get_model(self, model_name: str | None) -> Model:
        return _Model(self._provider.get_model(model_name), self._journal)
