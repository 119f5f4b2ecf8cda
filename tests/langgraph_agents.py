"""LangGraph agents the Slack end-to-end tests start (`PARLEY_AGENTS=slack_agents,langgraph_agents`).

Each graph runs LangGraph's real code on a SQLite checkpointer in the data directory, with a
model written for the test: `ScriptedModel` proposes tool calls on its first turn and sums up the
tool results on the next, deciding from the conversation alone, so a fresh process continues it.
Every model call, node entry and tool effect is counted in files (`tests/effect_counters.py`),
so "ran once" is read from outside the killed and the living workers alike.
"""

from __future__ import annotations

import json
import operator
import time
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, TypedDict

from effect_counters import bump
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt
from slack_agents import params

from workers import AgentRun, agent
from workers.integrations.langgraph import run_graph
from workers.interaction import Item, ItemType, Request


def _gate(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {path} never opened")
        time.sleep(0.05)


def _saver(run: AgentRun) -> Any:
    return SqliteSaver.from_conn_string(str(run.data_dir / "langgraph-tests.sqlite"))


# ---- two tools needing approval, each interrupting in its own branch -----------------------------
class Turns(TypedDict, total=False):
    calls: list[dict[str, Any]]
    results: Annotated[list[str], operator.add]
    answer: str


PROPOSED = [
    {"name": "refund", "args": {"order": "A-1", "amount": 40}},
    {"name": "email", "args": {"to": "ann@example.com", "subject": "Your refund"}},
]


def two_tools_graph(run: AgentRun, checkpointer: Any, gate: str | None) -> Any:
    data, rid = run.data_dir, run.run_id

    def model(state: Turns) -> Turns:
        n = bump(data, rid, "model")
        if not state.get("results"):
            return {"calls": PROPOSED}
        return {"answer": f"model call {n} saw: " + " | ".join(sorted(state["results"]))}

    def fan_out(state: Turns) -> Any:
        return [Send("tool", call) for call in state["calls"]] if "answer" not in state else END

    def tool(call: dict[str, Any]) -> Turns:
        bump(data, rid, f"enter-{call['name']}")
        review = {
            "action_requests": [{**call, "description": f"Run {call['name']}"}],
            "review_configs": [{"action_name": call["name"], "allowed_decisions": ["approve", "edit", "reject"]}],
        }
        decision = interrupt(review)["decisions"][0]
        if decision["type"] == "reject":
            return {"results": [f"{call['name']} rejected: {decision.get('message', '')}"]}
        args = decision["edited_action"]["args"] if decision["type"] == "edit" else call["args"]
        bump(data, rid, f"ran-{call['name']}")
        with (data / "counters" / f"{rid}.args-{call['name']}").open("w") as f:
            f.write(json.dumps(args))
        return {"results": [f"{call['name']} ran with {json.dumps(args, sort_keys=True)}"]}

    def after_tools(state: Turns) -> Turns:
        bump(data, rid, "after-tools")
        if gate:
            _gate(data / "gates" / gate)
        return {}

    graph = StateGraph(Turns)
    graph.add_node("model", model)
    graph.add_node("tool", tool)
    graph.add_node("after_tools", after_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", fan_out, ["tool", END])
    graph.add_edge("tool", "after_tools")
    graph.add_edge("after_tools", "model")
    return graph.compile(checkpointer=checkpointer)


@agent("lg-two", description="A graph whose two tool calls each need an approval, asked at once")
def two_tools(run: AgentRun, text: str) -> str:
    bump(run.data_dir, run.run_id, "exec")
    p = params(text)
    with _saver(run) as saver:
        out = run_graph(run, two_tools_graph(run, saver, p.get("gate")), {"results": []})
    return str(out["answer"])


# ---- LangChain's HumanInTheLoopMiddleware, all four decisions in one review -------------------
class ScriptedModel(BaseChatModel):
    """Calls four tools on its first turn; then reports what each tool message said."""

    data_dir: str
    run_id: str

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        bump(Path(self.data_dir), self.run_id, "model")
        said = [m for m in messages if isinstance(m, ToolMessage)]
        if not said:
            calls = [
                {"name": "lookup_order", "args": {"order": "A-7"}, "id": "call_lookup"},
                {"name": "issue_refund", "args": {"order": "A-7", "amount": 90}, "id": "call_refund"},
                {"name": "close_account", "args": {"customer": "ann"}, "id": "call_close"},
                {"name": "ask_customer", "args": {"question": "Keep the newsletter?"}, "id": "call_ask"},
            ]
            message = AIMessage(content="", tool_calls=calls)
        else:
            message = AIMessage(content=" | ".join(f"{m.name}: {m.content}" for m in sorted(said, key=_by_name)))
        return ChatResult(generations=[ChatGeneration(message=message)])


def _by_name(m: ToolMessage) -> str:
    return str(m.name)


def hitl_agent_graph(run: AgentRun, checkpointer: Any, mode: str = "batched") -> Any:
    data, rid = run.data_dir, run.run_id

    def lookup_order(order: str) -> str:
        """Look an order up."""
        bump(data, rid, "ran-lookup_order")
        return f"order {order} found"

    def issue_refund(order: str, amount: int) -> str:
        """Refund an order."""
        bump(data, rid, "ran-issue_refund")
        return f"refunded {amount} on {order}"

    def close_account(customer: str) -> str:
        """Close a customer's account."""
        bump(data, rid, "ran-close_account")
        return f"closed {customer}"

    def ask_customer(question: str) -> str:
        """Ask the customer something."""
        bump(data, rid, "ran-ask_customer")
        return "no answer"

    review = HumanInTheLoopMiddleware(
        interrupt_on={
            "lookup_order": {"allowed_decisions": ["approve", "reject"]},
            "issue_refund": {"allowed_decisions": ["approve", "edit", "reject"]},
            "close_account": True,
            "ask_customer": {"allowed_decisions": ["respond"]},
        },
        edit_notice=None,
        interrupt_mode=mode,
    )
    return create_agent(
        ScriptedModel(data_dir=str(data), run_id=rid),
        tools=[lookup_order, issue_refund, close_account, ask_customer],
        middleware=[review],
        checkpointer=checkpointer,
    )


@agent("lg-hitl", description="A LangChain agent whose HumanInTheLoopMiddleware review is asked in Slack")
def hitl(run: AgentRun, text: str) -> str:
    bump(run.data_dir, run.run_id, "exec")
    mode = params(text).get("mode", "batched")
    with _saver(run) as saver:
        out = run_graph(run, hitl_agent_graph(run, saver, mode), {"messages": [{"role": "user", "content": text}]})
    return str(out["messages"][-1].content)


# ---- LangGraph's own "Approve or reject" example -----------------------------------------------
# As LangGraph's interrupts guide publishes it (docs.langchain.com/oss/python/langgraph/interrupts,
# "Approve or reject", full example), built in a function; only the checkpointer is SQLite on a
# file, since a run's worker may not be the one that resumes it.
class ApprovalState(TypedDict):
    action_details: str
    status: Optional[Literal["pending", "approved", "rejected"]]  # noqa: UP045 (as published)


def approval_node(state: ApprovalState) -> Command[Literal["proceed", "cancel"]]:
    # Expose details so the caller can render them in a UI
    decision = interrupt(
        {
            "question": "Approve this action?",
            "details": state["action_details"],
        }
    )

    # Route to the appropriate node after resume
    return Command(goto="proceed" if decision else "cancel")


def proceed_node(state: ApprovalState):
    return {"status": "approved"}


def cancel_node(state: ApprovalState):
    return {"status": "rejected"}


def approval_graph(checkpointer: Any) -> Any:
    builder = StateGraph(ApprovalState)
    builder.add_node("approval", approval_node)
    builder.add_node("proceed", proceed_node)
    builder.add_node("cancel", cancel_node)
    builder.add_edge(START, "approval")
    builder.add_edge("proceed", END)
    builder.add_edge("cancel", END)
    return builder.compile(checkpointer=checkpointer)


@agent("lg-approval", description="LangGraph's approve-or-reject example, its approval asked in Slack")
def approve_or_reject(run: AgentRun, text: str) -> str:
    with _saver(run) as saver:
        out = run_graph(run, approval_graph(saver), {"action_details": "Transfer $500", "status": "pending"})
    return f"status: {out['status']}"


# ---- a secret: refused as an interrupt, asked with run.ask before the graph instead ----------------
TOKEN = Request(reason="Your API token", items=[Item(id="token", text="Token", type=ItemType.SECRET)])


class Login(TypedDict, total=False):
    done: str


def login_graph(run: AgentRun, checkpointer: Any, interrupting: bool) -> Any:
    def log_in(state: Login) -> Login:
        bump(run.data_dir, run.run_id, "log-in")
        token = interrupt(TOKEN)["token"] if interrupting else run.secret("token")
        (run.data_dir / "counters" / f"{run.run_id}.token").write_text(token)
        return {"done": f"logged in with a token of {len(token)} characters"}

    graph = StateGraph(Login)
    graph.add_node("log_in", log_in)
    graph.add_edge(START, "log_in")
    graph.add_edge("log_in", END)
    return graph.compile(checkpointer=checkpointer)


@agent("lg-secret", description="A graph logging in with a token a person gives")
def secret_login(run: AgentRun, text: str) -> str:
    interrupting = bool(params(text).get("interrupt"))
    if not interrupting:
        run.ask(TOKEN, key="token")  # the value stays in the run; the node reads it with run.secret
    with _saver(run) as saver:
        out = run_graph(run, login_graph(run, saver, interrupting), {})
    return str(out["done"])


# ---- a HITL review past the form's limit (nine arguments) and the binding's (a 5,000-character one) ---
WIDE_ARGS = {
    name: f"{name} as proposed"
    for name in ["title", "owner", "team", "priority", "component", "version", "region", "summary", "due"]
}
"""Nine arguments: one more than an approval can make editable."""
LONG_BODY = "".join(f"line {n:04d}\n" for n in range(500))
"""5,000 characters: more than the 2,000 an approval binds whole."""


class Review(TypedDict, total=False):
    ran_with: dict[str, Any]


@agent("lg-wide-long", description="A graph whose one HITL action has nine arguments, or a 5,000-character one")
def wide_long_review(run: AgentRun, text: str) -> str:
    args = {"title": "Quarterly notes", "body": LONG_BODY} if params(text).get("long") else WIDE_ARGS

    def review(state: Review) -> Review:
        request = {
            "action_requests": [{"name": "publish", "args": args, "description": "Publish it"}],
            "review_configs": [{"action_name": "publish", "allowed_decisions": ["approve", "edit", "reject"]}],
        }
        decision = interrupt(request)["decisions"][0]
        if decision["type"] == "reject":
            return {"ran_with": {}}
        ran_with = decision["edited_action"]["args"] if decision["type"] == "edit" else args
        bump(run.data_dir, run.run_id, "published")
        (run.data_dir / "counters" / f"{run.run_id}.published-args").write_text(json.dumps(ran_with))
        return {"ran_with": ran_with}

    graph = StateGraph(Review)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    with _saver(run) as saver:
        out = run_graph(run, graph.compile(checkpointer=saver), {})
    return f"published with {len(out['ran_with'])} arguments"
