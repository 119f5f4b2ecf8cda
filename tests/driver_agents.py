"""Three agents that never stop pausing, one per framework adapter, for tests/test_framework_driver.py.

Each runs its framework's real code on a test model: a Pydantic AI `FunctionModel`, the OpenAI
Agents SDK on `oa_agents.ScriptedModel`, and a LangGraph graph on SQLite. Every round asks to
approve one more action, so only the driver's `MAX_ROUNDS` ends them. Each model call counts
`model`, each approved action `acted` (tests/effect_counters.py): a replay repeats neither.
"""

from __future__ import annotations

import sqlite3
from typing import Any, TypedDict

from agents import Agent as SdkAgent
from agents import function_tool
from effect_counters import bump
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt
from oa_agents import ScriptedModel, tool_call
from pai_agents import tool_returns
from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from workers import AgentRun, agent
from workers.integrations import langgraph, openai_agents, pydantic_ai

PAI, OA, LG = "t-drive-pai", "t-drive-oa", "t-drive-lg"
ROUNDS_SCRIPTED = 12
"""Rounds the scripted OpenAI model asks for: more than the tests' bound."""


@agent(PAI, listed=False)
def pai_keeps_pausing(run: AgentRun, text: str) -> str:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        bump(run.data_dir, run.run_id, "model")
        n = len(tool_returns(messages)) + 1
        return ModelResponse(parts=[ToolCallPart("act", {"n": n}, tool_call_id=f"act-{n}")])

    pai_agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(model), output_type=[str, DeferredToolRequests]
    )

    @pai_agent.tool_plain(requires_approval=True)
    def act(n: int) -> str:
        """Act once more."""
        bump(run.data_dir, run.run_id, "acted")
        return f"acted {n}"

    return str(pydantic_ai.run_agent(run, pai_agent, "act"))


@agent(OA, listed=False)
def oa_keeps_pausing(run: AgentRun, text: str) -> str:
    @function_tool(needs_approval=True)
    def act(n: int) -> str:
        """Act once more."""
        bump(run.data_dir, run.run_id, "acted")
        return f"acted {n}"

    rounds = [[tool_call("act", {"n": n}, f"call_{n}")] for n in range(1, ROUNDS_SCRIPTED + 1)]
    sdk_agent = SdkAgent(name="actor", instructions="Act.", model=ScriptedModel(run.data_dir, run.run_id, rounds))
    sdk_agent.tools.append(act)
    return str(openai_agents.run_agent(run, sdk_agent, "act", max_turns=2))  # the SDK's bound is per call


class Count(TypedDict, total=False):
    n: int


@agent(LG, listed=False)
def lg_keeps_pausing(run: AgentRun, text: str) -> str:
    def ask(state: Count) -> Count:
        n = state.get("n", 0) + 1
        interrupt({"question": f"Act a time {n}?"})
        bump(run.data_dir, run.run_id, "acted")
        return {"n": n}

    builder = StateGraph(Count)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "ask")
    saver = SqliteSaver(sqlite3.connect(str(run.data_dir / "driver-tests.sqlite"), check_same_thread=False))
    graph: Any = builder.compile(checkpointer=saver)
    return str(langgraph.run_graph(run, graph, {"n": 0}))
