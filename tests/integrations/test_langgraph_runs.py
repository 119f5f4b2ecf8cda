"""`run_graph` in-process: real LangGraph graphs on SQLite checkpointers, a real Redis and an RQ SimpleWorker.

The Slack end to end of the same graphs is tests/integrations/test_langgraph_slack.py; here are the refusals,
the shapes an interrupt is asked by, and the shipped `lg_refund` agent.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import langgraph_agents  # registers lg-two, lg-hitl and lg-secret
import pytest
from cryptography.fernet import Fernet
from effect_counters import count
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from redis import Redis
from runtime_helpers import paused, runtime_and_host, start, work
from secret_support import keys_holding

from workers import registry
from workers.exceptions import AgentUnavailable
from workers.integrations.langgraph import CALL_MARK, RUN_MARK, GraphNotDurable, _call, durable_checkpointer
from workers.integrations.langgraph_pauses import GraphError, Pause, choice_value, plan, questions
from workers.interaction import Answer, Request
from workers.interaction.approval import approval_answers
from workers.logs import Log
from workers.registry import load_agents
from workers.runtime.acceptance import accept
from workers.runtime.wiring import Runtime
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


def _graph(checkpointer: Any) -> Any:
    graph = StateGraph(dict)
    graph.add_node("n", lambda s: s)
    graph.add_edge(START, "n")
    graph.add_edge("n", END)
    return graph.compile(checkpointer=checkpointer)


def test_a_graph_without_a_durable_checkpointer_is_refused(tmp_path: Path) -> None:
    with pytest.raises(GraphNotDurable, match="no checkpointer"):
        durable_checkpointer(_graph(None))
    with pytest.raises(GraphNotDurable, match=r"InMemorySaver\) keeps checkpoints in memory"):
        durable_checkpointer(_graph(InMemorySaver()))
    in_memory = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    with pytest.raises(GraphNotDurable, match=r"SqliteSaver\) keeps checkpoints in memory"):
        durable_checkpointer(_graph(in_memory))
    assert durable_checkpointer(_graph(in_memory), allow_memory=True) is in_memory
    on_file = SqliteSaver(sqlite3.connect(tmp_path / "g.sqlite", check_same_thread=False))
    assert durable_checkpointer(_graph(on_file)) is on_file


def test_each_interrupt_is_asked_by_its_shape() -> None:
    request = Request(reason="Pick", items=[{"id": "c", "text": "Colour", "type": "select", "options": ["a", "b"]}])
    assert plan("i1", request).kind == "request"
    assert plan("i2", request.model_dump(mode="json")).kind == "request"
    hitl = {
        "action_requests": [{"name": "pay", "args": {"amount": 3}, "description": "Pay 3"}],
        "review_configs": [{"action_name": "pay", "allowed_decisions": ["approve", "reject"]}],
    }
    pause = plan("i3", hitl)
    [q] = questions(pause, "k")
    assert pause.kind == "hitl" and q.request.approval is not None and q.request.approval.editable == []
    other = plan("i4", {"what": "name?"})
    [q] = questions(other, "k")
    assert other.kind == "choice" and '"what": "name?"' in q.request.reason and len(q.request.items) == 1


def test_a_value_of_no_known_shape_is_answered_by_a_choice_never_by_a_texts_truth() -> None:
    asks = plan("i1", {"question": "Approve this action?", "details": "Transfer $500"})
    [q] = questions(asks, "k")
    assert q.request.reason == 'Approve this action?\n{\n  "details": "Transfer $500"\n}'
    assert [i.id for i in q.request.items] == ["decision", "reply"]  # a reply goes with the choice
    assert q.request.items[0].required and not q.request.items[1].required  # the click is required
    [q] = questions(plan("i2", ["a", "b"]), "k")
    assert [i.id for i in q.request.items] == ["decision"]  # one-click Approve / Reject
    assert [(o.value, o.label) for o in q.request.items[0].options or []] == [
        ("approve", "Approve"),
        ("reject", "Reject"),
    ]
    assert choice_value({"decision": "approve"}) is True
    assert choice_value({"decision": "approve", "reply": "  "}) is True
    assert choice_value({"decision": "approve", "reply": "Ada Lovelace"}) == "Ada Lovelace"
    for reply in ("yes", "go ahead", "Please do", "approve it", ""):
        assert choice_value({"decision": "reject", "reply": reply}) is False, reply  # the click decides
    assert choice_value({"answer": "no"}) is False  # a free-text pause recorded by an earlier version


def _members(rt: Runtime, run_id: str) -> dict[str, Any]:
    group = rt.store.groups.group(paused(rt, run_id))
    assert group is not None
    return {m.key: m for m in rt.store.groups.members(group)}


def test_two_interrupts_are_one_group_and_the_graph_resumes_once(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "lg-two", "{}")
    work(rt)
    members = _members(rt, run_id)
    assert len(members) == 2 and len(host.questions) == 2
    by_action = {m.request.approval.action: m for m in members.values()}  # keys follow interrupt ids, random
    refund, email = by_action["refund"], by_action["email"]
    edited = [Answer(id="amount", number=25)]
    accept(rt, refund.id, "U1", approval_answers(refund.request, edited, approve=True))
    accept(rt, email.id, "U1", approval_answers(email.request, [], approve=False, reason="not yet"))
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == (
        'model call 2 saw: email rejected: not yet | refund ran with {"amount": 25, "order": "A-1"}'
    )
    counts = {n: count(tmp_path, run_id, n) for n in ("exec", "model", "ran-refund", "ran-email", "after-tools")}
    assert counts == {"exec": 2, "model": 2, "ran-refund": 1, "ran-email": 0, "after-tools": 1}


def test_lg_refund_records_the_approved_amount_in_the_ledger(r: Redis, tmp_path: Path) -> None:
    load_agents()
    rt, host = runtime_and_host(r, tmp_path)
    requests = tmp_path / "refunds" / "requests"
    requests.mkdir(parents=True)
    (requests / "A-1001.json").write_text(json.dumps({"customer": "Ann", "amount": 120.5, "reason": "damaged"}))
    run_id = start(rt, "lg_refund", "A-1001")
    work(rt)
    question = rt.store.interrupt(paused(rt, run_id))
    assert question is not None and question.request.approval is not None
    assert question.request.reason == "Refund order A-1001 for Ann: damaged"
    accept(rt, question.id, "U1", approval_answers(question.request, [Answer(id="amount", number=99.5)], approve=True))
    work(rt)
    assert rt.store.get(run_id).result == "Refunded 99.50 to Ann for A-1001 (amount edited)."
    [entry] = [json.loads(line) for line in (tmp_path / "refunds" / "ledger.jsonl").read_text().splitlines()]
    assert entry == {"run_id": run_id, "order": "A-1001", "customer": "Ann", "amount": 99.5}
    missing = start(rt, "lg_refund", "B-2")
    (requests / "C-3.json").write_text(json.dumps({"customer": "Bo", "amount": -5}))
    bad = start(rt, "lg_refund", "C-3")
    work(rt)
    # A refund that could not be made fails (no success mark in the thread), naming the file's full path.
    no_file = f"No refund request for B-2: there is no file {requests / 'B-2.json'}."
    refused = f"The refund request {requests / 'C-3.json'} cannot be used: amount: Input should be greater than 0."
    for run, reason in ((missing, no_file), (bad, refused)):
        record = rt.store.get(run)
        assert (record.status, record.error, record.result) == (RunStatus.FAILED, reason, "")
        assert (run, reason) in host.failures and run not in dict(host.finals)
    assert len((tmp_path / "refunds" / "ledger.jsonl").read_text().splitlines()) == 1


def test_per_call_reviews_are_one_group_each_resumed_with_its_own_decision(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "lg-hitl", {"mode": "per_call"})
    work(rt)
    by_tool = {}
    for member in _members(rt, run_id).values():
        approval = member.request.approval
        by_tool[approval.action if approval else "ask_customer"] = member
    assert sorted(by_tool) == ["ask_customer", "close_account", "issue_refund", "lookup_order"]
    assert by_tool["lookup_order"].request.approval.editable == []  # its response schema allows no edit

    def approve(tool: str, given: list[Answer], yes: bool, reason: str | None = None) -> None:
        q = by_tool[tool]
        accept(rt, q.id, "U1", approval_answers(q.request, given, approve=yes, reason=reason))

    approve("lookup_order", [], True)
    approve("issue_refund", [Answer(id="amount", number=60)], True)
    approve("close_account", [], False, "she is staying")
    accept(rt, by_tool["ask_customer"].id, "U1", [Answer(id="answer", free_text="Yes, keep it")])
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == (
        "ask_customer: Yes, keep it"
        " | close_account: User rejected the tool call for `close_account` with reason: she is staying"
        " | issue_refund: refunded 60 on A-7 | lookup_order: order A-7 found"
    )
    ran = {t: count(tmp_path, run_id, f"ran-{t}") for t in by_tool}
    assert ran == {"lookup_order": 1, "issue_refund": 1, "close_account": 0, "ask_customer": 0}
    assert count(tmp_path, run_id, "model") == 2


def test_a_shipped_agent_whose_extra_is_missing_is_skipped_and_a_listed_module_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "needs_extra.py").write_text("import parley_no_such_framework\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "BUILTIN_MODULES", (*registry.BUILTIN_MODULES, "needs_extra"))
    monkeypatch.setattr(registry, "OPTIONAL_FRAMEWORKS", registry.OPTIONAL_FRAMEWORKS | {"parley_no_such_framework"})
    assert "lg_refund" in load_agents().names()  # skipped quietly as a shipped agent
    monkeypatch.setattr(registry, "BUILTIN_MODULES", registry.BUILTIN_MODULES[:-1])
    with pytest.raises(AgentUnavailable, match="its module `needs_extra` failed to load"):
        load_agents(["needs_extra"]).get("needs_extra")


def test_a_call_whose_step_was_never_recorded_is_taken_up_not_made_again(tmp_path: Path) -> None:
    """A worker that dies after the graph stopped but before its step was recorded: the replay
    finds the call's own checkpoint and returns what it returned, running no node."""
    entered: list[str] = []

    class Greeting(TypedDict, total=False):
        name: str
        greeting: str

    def ask(state: Greeting) -> Greeting:
        entered.append("ask")
        return {"name": interrupt("Whom should I greet?")}

    def greet(state: Greeting) -> Greeting:
        entered.append("greet")
        return {"greeting": f"Hello, {state['name']}!"}

    graph = StateGraph(Greeting)
    graph.add_node("ask", ask)
    graph.add_node("greet", greet)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "greet")
    graph.add_edge("greet", END)
    saver = SqliteSaver(sqlite3.connect(tmp_path / "g.sqlite", check_same_thread=False))
    compiled, said = graph.compile(checkpointer=saver), Log("test")

    def config(n: int) -> dict[str, Any]:
        return {"configurable": {"thread_id": "t"}, "metadata": {RUN_MARK: "r1", CALL_MARK: n}}

    first = _call(compiled, saver, config(0), {}, said)
    assert _call(compiled, saver, config(0), {}, said) == first and entered == ["ask"]
    [pause] = first["interrupts"]
    assert pause["kind"] == "choice" and pause["shown"] == "Whom should I greet?" and pause["reply"]
    resume = Command(resume={pause["id"]: "Ada"})
    ended = _call(compiled, saver, config(1), resume, said)
    assert (
        _call(compiled, saver, config(1), resume, said) == ended == {"json": {"name": "Ada", "greeting": "Hello, Ada!"}}
    )
    assert entered == ["ask", "ask", "greet"]  # LangGraph enters the interrupted node once more, to resume it


def test_an_interrupt_asking_a_secret_is_refused_before_anyone_is_asked(r: Redis, tmp_path: Path) -> None:
    """A graph resumes with its answers, which LangGraph keeps in the checkpointer in clear: a secret
    item is refused where the interrupt is planned, as `ask_all` and MCP refuse one."""
    rt, host = runtime_and_host(r, tmp_path, secret_key=Fernet.generate_key().decode())
    run_id = start(rt, "lg-secret", {"interrupt": True})
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, host.questions) == (RunStatus.FAILED, [])
    assert "has a secret item" in record.error and "run.ask before run_graph" in record.error
    assert count(tmp_path, run_id, "log-in") == 1  # not retried

    token = langgraph_agents.TOKEN
    refused = r"interrupt 'i1' has a secret item: LangGraph keeps .* in its checkpointer, in clear"
    for value in (token, token.model_dump(mode="json")):
        with pytest.raises(GraphError, match=refused):
            plan("i1", value)
    earlier = Pause(id="i1", kind="request", request=token.model_dump(mode="json"))  # as an earlier version planned
    with pytest.raises(GraphError, match=refused):
        questions(earlier, "k")


def test_a_secret_asked_before_the_graph_is_read_in_a_node_and_never_checkpointed(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path, secret_key=Fernet.generate_key().decode())
    run_id = start(rt, "lg-secret", {})
    work(rt)
    question = rt.store.interrupt(paused(rt, run_id))
    assert question is not None and question.request.has_secret
    token = f"tok-{secrets.token_hex(10)}"
    accept(rt, question.id, "U1", [Answer(id="token", secret=token)])
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == f"logged in with a token of {len(token)} characters"
    assert (tmp_path / "counters" / f"{run_id}.token").read_text() == token  # the node read it with run.secret
    assert [f.name for f in tmp_path.rglob("*.sqlite*") if token.encode() in f.read_bytes()] == []
    assert keys_holding(r, token) == []
