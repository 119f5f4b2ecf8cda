"""`lg_refund`: a LangGraph refund graph run by `run_graph`, approved in Slack.

`/parley lg_refund A-1001` reads the refund request `refunds/requests/A-1001.json` in the data
directory. It holds `{"customer": …, "amount": …, "reason": …}`. Without a usable one, the run
fails, naming the file's full path. It asks for approval of the refund, with the amount
editable. The graph interrupts with LangChain's human-in-the-loop request shape. What was
approved is appended to the ledger `refunds/ledger.jsonl`.

The graph's checkpoints live in `langgraph.sqlite` in the data directory. A replay after the
answer runs no node again. It needs the `langgraph` extra:
`pip install 'parley-slack[langgraph]'`. It is offered only where that is installed. LangGraph
is imported when the agent runs, so loading the agents stays cheap.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import re
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workers import AgentRun, agent
from workers.exceptions import AgentError

_ORDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class RefundRequest(BaseModel):
    """A refund request file: who is refunded, how much, and why."""

    model_config = ConfigDict(extra="ignore")

    customer: str = Field(min_length=1, max_length=200)
    amount: float = Field(gt=0, le=1_000_000)
    reason: str = Field(default="no reason given", max_length=1000)


class Refund(TypedDict, total=False):
    """The graph's state: the order, its request, the reviewer's decision, the outcome.

    `problem` says why the request could not be used. The run then fails with it.
    """

    run_id: str
    order: str
    request: dict[str, Any]
    decision: dict[str, Any]
    outcome: str
    problem: str


def requests_dir(data_dir: Path) -> Path:
    return data_dir / "refunds" / "requests"


def ledger_path(data_dir: Path) -> Path:
    return data_dir / "refunds" / "ledger.jsonl"


def refund_graph(data_dir: Path, checkpointer: Any) -> Any:
    """Load the request, have a person review it, then record the outcome in the ledger.

    The ledger gets the refund, or why not.
    """
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def load(state: Refund) -> Refund:
        path = requests_dir(data_dir) / f"{state['order']}.json"
        if not path.is_file():
            return {"problem": f"No refund request for {state['order']}: there is no file {path}."}
        try:
            request = RefundRequest.model_validate_json(path.read_text())
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'file'}: {e['msg']}" for e in exc.errors())
            return {"problem": f"The refund request {path} cannot be used: {problems}."}
        return {"request": request.model_dump()}

    def review(state: Refund) -> Refund:
        req = state["request"]
        decision = interrupt(
            {
                "action_requests": [
                    {
                        "name": "refund",
                        "args": {"amount": req["amount"]},
                        "description": f"Refund order {state['order']} for {req['customer']}: {req['reason']}",
                    }
                ],
                "review_configs": [{"action_name": "refund", "allowed_decisions": ["approve", "edit", "reject"]}],
            }
        )
        return {"decision": decision["decisions"][0]}

    def record(state: Refund) -> Refund:
        decision, req = state["decision"], state["request"]
        if decision["type"] == "reject":
            return {"outcome": f"Refund of {state['order']} rejected: {decision.get('message') or 'no reason given'}."}
        amount = decision["edited_action"]["args"]["amount"] if decision["type"] == "edit" else req["amount"]
        entry = {"run_id": state["run_id"], "order": state["order"], "customer": req["customer"], "amount": amount}
        path = ledger_path(data_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(json.dumps(entry) + "\n")
        edited = " (amount edited)" if decision["type"] == "edit" else ""
        return {"outcome": f"Refunded {amount:.2f} to {req['customer']} for {state['order']}{edited}."}

    graph = StateGraph(Refund)
    graph.add_node("load", load)
    graph.add_node("review", review)
    graph.add_node("record", record)
    graph.add_edge(START, "load")
    graph.add_conditional_edges("load", lambda s: END if "problem" in s else "review", ["review", END])
    graph.add_edge("review", "record")
    graph.add_edge("record", END)
    return graph.compile(checkpointer=checkpointer)


def lg_refund(run: AgentRun, text: str) -> str:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from workers.integrations.langgraph import run_graph

    order = text.strip().split()[0] if text.strip() else ""
    if not _ORDER.fullmatch(order):
        raise AgentError(f"{order!r} is not an order id: letters, digits, '.', '_' or '-'.")
    with SqliteSaver.from_conn_string(str(run.data_dir / "langgraph.sqlite")) as saver:
        out = run_graph(run, refund_graph(run.data_dir, saver), {"run_id": run.run_id, "order": order})
    if "problem" in out:  # the refund could not be made: the run fails, saying why
        raise AgentError(str(out["problem"]))
    return str(out["outcome"])


DESCRIPTION = "Refund an order after a person approves the amount (a LangGraph graph): `/parley lg_refund A-1001`"
if importlib.util.find_spec("langgraph") is not None and importlib.util.find_spec("langgraph.checkpoint.sqlite"):
    agent("lg_refund", description=DESCRIPTION, usage="<order id>")(lg_refund)
