"""LangGraph graphs run by `run_graph`, end to end as Slack drives them.

Signed clicks and view submissions go to a real `parley serve`; the Web API is the loopback
stand-in; the graphs (tests/langgraph_agents.py) run on real `parley worker`s with SQLite
checkpointers. Model calls, node entries and tool effects are counted in files, so "once" is
read from outside every process, a SIGKILLed one included.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import signal
from collections.abc import Iterator
from typing import Any

import ormsgpack
import pytest
from effect_counters import count
from slack_forms import texts
from slack_stack import RunRef, SlackStack
from test_slack_approve import USER, click, submit_view

from workers.store import journal_names, keys

pytestmark = pytest.mark.system


@pytest.fixture(scope="module")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlackStack]:
    lease = {"PARLEY_LEASE_TTL": "2", "PARLEY_REQUEUE_GRACE": "1", "PARLEY_RETRY_DELAYS": "0"}
    env = {"PARLEY_AGENTS": "slack_agents,langgraph_agents", **lease}
    yield from SlackStack.running(redis_url, tmp_path_factory.mktemp("langgraph"), workers=1, extra_env=env)


def start(stack: SlackStack, agent: str, params: dict[str, Any]) -> RunRef:
    return stack.start_run(agent, json.dumps(params) + f" {secrets.token_hex(4)}", user=USER)


def asked(stack: SlackStack, run: RunRef, n: int, *names: str) -> dict[str, dict[str, Any]]:
    """The run's n questions once it is parked on them all, by the name of the tool each one is about."""

    def posted() -> list[dict[str, Any]]:
        found = [m for m in stack.thread(run) if (m.get("metadata") or {}).get("event_type") == "parley_question"]
        return found if len(found) >= n else []

    questions = stack.wait_for(f"{n} questions of run {run.run_id}", posted)
    stack.wait_status(run, "paused")
    found = {name: next(q for q in questions if _about(q, name)) for name in names}
    assert len({q["ts"] for q in found.values()}) == n
    return found


def _about(question: dict[str, Any], name: str) -> bool:
    shown = texts(question["blocks"])
    return f"Run {name}" in shown or f"Tool: {name}\n" in shown  # lg-two's descriptions, or the middleware's


def final(stack: SlackStack, run: RunRef, timeout: float = 30.0) -> str:
    done = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), "the run to finish", timeout)
    return str(done["text"])


def counts(stack: SlackStack, run: RunRef, *names: str) -> dict[str, int]:
    return {n: count(stack.data_dir, run.run_id, n) for n in names}


def test_two_tool_approvals_are_posted_at_once_and_the_graph_resumes_once(stack: SlackStack) -> None:
    run = start(stack, "lg-two", {})
    questions = asked(stack, run, 2, "refund", "email")
    assert counts(stack, run, "exec", "model") == {"exec": 1, "model": 1}  # parked once, both posted

    form = click(stack, run, questions["refund"], "parley_open_form")
    assert form is not None
    submit_view(stack, form, {"amount": {"type": "number_input", "value": "25"}})
    assert stack.status(run.run_id) == "paused"  # one answer of two: still parked
    reject = click(stack, run, questions["email"], "parley_reject")
    assert reject is not None
    submit_view(stack, reject, {"_reason": {"type": "plain_text_input", "value": "not before Monday"}})

    assert final(stack, run) == (
        ":white_check_mark: Done: model call 2 saw: email rejected: not before Monday"
        ' | refund ran with {"amount": 25, "order": "A-1"}'
    )
    names = ("exec", "model", "enter-refund", "enter-email", "ran-refund", "ran-email", "after-tools")
    assert counts(stack, run, *names) == {
        "exec": 2,  # the first execution and one resume
        "model": 2,  # one call per turn
        "enter-refund": 2,  # LangGraph enters an interrupted node again to resume it: once
        "enter-email": 2,
        "ran-refund": 1,
        "ran-email": 0,  # rejected: never ran, and the model saw why
        "after-tools": 1,
    }
    ran_with = (stack.data_dir / "counters" / f"{run.run_id}.args-refund").read_text()
    assert json.loads(ran_with) == {"order": "A-1", "amount": 25}  # the edit reached the tool


def test_a_worker_killed_while_the_graph_resumes_loses_nothing_and_repeats_nothing(stack: SlackStack) -> None:
    gate = f"g-{secrets.token_hex(4)}"
    run = start(stack, "lg-two", {"gate": gate})
    questions = asked(stack, run, 2, "refund", "email")
    click(stack, run, questions["refund"], "parley_approve")
    click(stack, run, questions["email"], "parley_approve")
    # The resumed graph ran both tools, then stops at the gate before the model's second turn.
    stack.wait_for("the resumed graph to reach its gate", lambda: count(stack.data_dir, run.run_id, "after-tools"))
    assert counts(stack, run, "ran-refund", "ran-email") == {"ran-refund": 1, "ran-email": 1}
    [worker] = [p for p in stack.procs if "worker" in p.args and p.poll() is None]
    with contextlib.suppress(ProcessLookupError):
        os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)
    assert stack.status(run.run_id) == "running"  # nobody has noticed yet

    (stack.data_dir / "gates").mkdir(exist_ok=True)
    (stack.data_dir / "gates" / gate).touch()
    stack.spawn_worker("worker-after-kill")
    assert final(stack, run, timeout=45) == (
        ':white_check_mark: Done: model call 2 saw: email ran with {"subject": "Your refund", "to": "ann@example.com"}'
        ' | refund ran with {"amount": 40, "order": "A-1"}'
    )
    assert counts(stack, run, "exec", "model", "enter-refund", "ran-refund", "ran-email", "after-tools") == {
        "exec": 3,  # the first, the killed resume, the resume that took over
        "model": 2,
        "enter-refund": 2,  # the resume was sent once: the node was not entered a third time
        "ran-refund": 1,
        "ran-email": 1,
        "after-tools": 2,  # the node the worker died in, then once more
    }
    taken_over = [
        line
        for line in (stack.data_dir / "worker-after-kill.log").read_text().splitlines()
        if run.run_id in line and "graph call goes on from its last checkpoint" in line
    ]
    assert len(taken_over) == 1, stack.logs()  # from the checkpoint the killed call wrote, not a second resume


def test_a_hitl_middleware_review_round_trips_all_four_decisions(stack: SlackStack) -> None:
    run = start(stack, "lg-hitl", {})
    q = asked(stack, run, 4, "lookup_order", "issue_refund", "close_account", "ask_customer")
    assert [
        e["text"]["text"]
        for b in q["lookup_order"]["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if e["type"] == "button"
    ] == ["Approve", "Reject"]  # its review allows no edit

    click(stack, run, q["lookup_order"], "parley_approve")
    form = click(stack, run, q["issue_refund"], "parley_open_form")
    assert form is not None
    submit_view(stack, form, {"amount": {"type": "number_input", "value": "60"}})
    reject = click(stack, run, q["close_account"], "parley_reject")
    assert reject is not None
    submit_view(stack, reject, {"_reason": {"type": "plain_text_input", "value": "she is staying"}})
    resp, _ = stack.submit(run, q["ask_customer"], {"Your answer, in place of ask_customer": "Yes, keep it"})
    assert resp.status_code == 200 and resp.text == ""

    done = final(stack, run)
    assert done == (
        ":white_check_mark: Done: ask_customer: Yes, keep it"
        " | close_account: User rejected the tool call for `close_account` with reason: she is staying"
        " | issue_refund: refunded 60 on A-7 | lookup_order: order A-7 found"
    )
    names = ("exec", "model", "ran-lookup_order", "ran-issue_refund", "ran-close_account", "ran-ask_customer")
    assert counts(stack, run, *names) == {
        "exec": 2,
        "model": 2,
        "ran-lookup_order": 1,
        "ran-issue_refund": 1,
        "ran-close_account": 0,
        "ran-ask_customer": 0,  # answered by a person in its place
    }


def test_a_step_record_rewritten_in_redis_runs_nothing_when_the_run_resumes(stack: SlackStack) -> None:
    """Redis holds nothing executable: a recorded outcome naming `os.system` fails the run, unbuilt."""
    order = f"X-{secrets.token_hex(3)}"
    requests = stack.data_dir / "refunds" / "requests"
    requests.mkdir(parents=True, exist_ok=True)
    (requests / f"{order}.json").write_text(json.dumps({"customer": "Ann", "amount": 500, "reason": "test"}))
    run = stack.start_run("lg_refund", order, user=USER)
    question = stack.question(run, 1)
    stack.wait_status(run, "paused")

    marker = stack.data_dir / f"ran-{order}"
    command = ormsgpack.Ext(0, ormsgpack.packb(["os", "system", f"touch {marker}"]))  # LangGraph's constructor ext
    forged = {"serde": ["msgpack", base64.b64encode(ormsgpack.packb({"outcome": command})).decode()]}
    field = journal_names.step(f"langgraph:{run.run_id}:1")
    assert stack.redis is not None and stack.redis.hexists(keys.journal(run.run_id), field)
    stack.redis.hset(keys.journal(run.run_id), field, json.dumps({"v": forged}))

    click(stack, run, question, "parley_approve")
    status = stack.wait_status(run, "failed", "succeeded")
    assert not marker.exists()  # nothing was called by name
    assert status == "failed"
    error = stack.redis.hget(f"parley:run:{run.run_id}", "error").decode()
    assert "names os.system, which is not an allowed type" in error
    refused = [line for line in stack.logs(tail=10**7).splitlines() if "graph output record refused" in line]
    assert refused and all(run.run_id in line for line in refused), stack.logs()
    ledger = stack.data_dir / "refunds" / "ledger.jsonl"
    assert not ledger.exists() or order not in ledger.read_text()


@pytest.mark.parametrize(
    ("answer", "branch"),
    [
        ({"Your decision": "Reject"}, "rejected"),
        ({"Your decision": "Approve"}, "approved"),
        ({"Your decision": "Reject", "Reply (sent with Approve)": "go ahead"}, "rejected"),  # the click decides
        ({"Your decision": "Approve", "Reply (sent with Approve)": "Please don't"}, "approved"),
    ],
)
def test_langgraphs_approve_or_reject_example_takes_the_branch_the_person_chose(
    stack: SlackStack, answer: dict[str, str], branch: str
) -> None:
    run = start(stack, "lg-approval", {})
    question = stack.question(run, 1)
    shown = texts(question["blocks"])
    assert "Approve this action?" in shown and "Transfer $500" in shown
    resp, _ = stack.submit(run, question, answer)
    assert resp.status_code == 200 and resp.text == "", resp.text
    assert final(stack, run) == f":white_check_mark: Done: status: {branch}"
