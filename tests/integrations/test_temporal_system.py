"""Temporal workflows ask through Parley, end to end: a real `temporal server start-dev`, a Temporal
worker process running `temporal_workflows` with Parley's activities, a live `parley serve`, real
`parley worker`s and the Slack Web API stand-in. People answer with Slack's own signed payloads."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import PARLEY, Token, create_token
from slack_stack import SlackStack, stop_process_group
from stacks import Stacks
from temporal_steps import (
    click,
    click_submit,
    interact_at,
    is_open,
    message_of,
    modal,
    questions_of,
    result,
    signals_received,
    start,
    status,
    submit_modal,
    submit_payload,
    unreachable_serve,
)
from temporal_support import SHIP_REQUEST, TemporalDev, TemporalWorker, stack_env
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError

from parley.client import Parley
from workers.questions.config import TemporalConfig
from workers.questions.signal_client import SignalClient, SignalRefused, request_id
from workers.store.questions import QuestionStore

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "temporal_refund.py"
CAROL, DAVE, ERIN = "U0CAROL", "U0DAVE", "U0ERIN"
HELD_QUEUE = "parley-tests-held"


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TemporalDev]:
    yield from TemporalDev.running(tmp_path_factory.mktemp("temporal"))


@pytest.fixture(scope="module")
def stack(redis_url: str, temporal: TemporalDev, stacks: Stacks) -> SlackStack:
    return stacks(redis_url=redis_url, extra_env=stack_env(temporal))


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    """The Temporal worker's token, granted the tests' workflows and the example's refunds, no others."""
    return create_token(stack, "workflows", temporal=("*Workflow-*", "refund-*"))


@pytest.fixture(scope="module")
def worker(stack: SlackStack, temporal: TemporalDev, token: Token) -> Iterator[TemporalWorker]:
    yield from TemporalWorker.for_stack(temporal, stack, token.token)


@pytest.fixture(scope="module")
def held_worker(stack: SlackStack, temporal: TemporalDev, token: Token) -> Iterator[TemporalWorker]:
    """A second worker, on `HELD_QUEUE`, whose create activity waits for the test (`HeldParley`)."""
    (stack.data_dir / "held").mkdir(exist_ok=True)
    env = {"PARLEY_TEST_HOLD_DIR": str(stack.data_dir / "held")}
    yield from TemporalWorker.for_stack(temporal, stack, token.token, task_queue=HELD_QUEUE, env=env)


@pytest.fixture(scope="module")
def unreachable(stack: SlackStack) -> int:
    """The port of a second `parley serve`, one that cannot reach Temporal."""
    return unreachable_serve(stack)


# ---- helpers ----------------------------------------------------------------------------------------
def history(stack: SlackStack, question_id: str) -> list[dict[str, Any]]:
    assert stack.redis is not None
    raw = stack.redis.lrange(f"parley:run:{question_id}:history", 0, -1)
    return [json.loads(entry) for entry in raw]


def signal_entries(stack: SlackStack, question_id: str) -> list[dict[str, Any]]:
    return [h for h in history(stack, question_id) if str(h.get("event", "")).startswith("temporal signal")]


# ---- a whole ask -----------------------------------------------------------------------------------
def test_a_workflow_asks_a_person_answers_in_slack_and_it_resumes_with_typed_answers(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL, "assignees": [CAROL]})
    [question] = questions_of(stack, token, wid)
    assert question["temporal"] == {
        "workflow_id": wid,
        "namespace": "default",
        "key": question["temporal"]["key"],
        "status": "waiting",
        "attempts": 0,
        "last_error": None,
        "delivered_at": None,
    }
    # the activity's post, retried with its key (the question's key), gets the same question: nothing posted twice
    with Parley(f"http://127.0.0.1:{stack.port}", token.token) as parley:
        again = parley.submit(
            {**SHIP_REQUEST, "assignees": [CAROL]},
            channel=CHANNEL,
            temporal={"workflow_id": wid, "namespace": "default", "key": question["temporal"]["key"]},
            idempotency_key=question["temporal"]["key"],
        )
    assert again == question["id"]
    clicked = time.time()
    resp = click_submit(stack, question, {"Ship": "yes", "How many": "12"}, CAROL)
    assert resp.status_code == 200, resp.text
    got = result(temporal, wid)
    assert got["status"] == "answered" and got["question_id"] == question["id"]
    assert got["answers"] == {"ship": "yes", "count": 12} and got["by"] == CAROL  # typed: 12 is a number
    assert got["resumed_at"] - clicked < 1.0, got["resumed_at"] - clicked
    stack.wait_for("the delivery to be recorded", lambda: signal_entries(stack, question["id"]))
    [entry] = signal_entries(stack, question["id"])
    assert entry["event"] == "temporal signal delivered"
    assert entry["detail"]["workflow_id"] == wid and entry["detail"]["attempts"] == 1
    # `parley runs show` names the workflow the question signals
    show = subprocess.run(
        [str(PARLEY), "runs", "show", question["id"]], env=stack.env(), capture_output=True, text=True, check=True
    ).stdout
    assert f"temporal workflow: {wid} (namespace default)" in show
    assert "temporal signal delivered" in show


def test_two_asks_at_once_are_two_questions_each_delivered_to_its_own_await(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    first = {**SHIP_REQUEST, "reason": "First of two?"}
    second = {**SHIP_REQUEST, "reason": "Second of two?"}
    wid = start(temporal, "GatherWorkflow", {"requests": [first, second], "channel": CHANNEL})
    questions = questions_of(stack, token, wid, count=2)
    by_reason = {q["reason"]: q for q in questions}
    click_submit(stack, by_reason["Second of two?"], {"Ship": "no", "How many": "2"}, DAVE)
    click_submit(stack, by_reason["First of two?"], {"Ship": "yes", "How many": "1"}, CAROL)
    got = result(temporal, wid)
    assert [(o["question_id"], o["answers"], o["by"]) for o in got] == [
        (by_reason["First of two?"]["id"], {"ship": "yes", "count": 1}, CAROL),
        (by_reason["Second of two?"]["id"], {"ship": "no", "count": 2}, DAVE),
    ]


# ---- edit and reject -------------------------------------------------------------------------------
def test_an_approval_with_an_edited_amount_returns_the_edited_decision(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    args = {"order": "A-17", "amount": 120}
    wid = start(temporal, "ApproveWorkflow", {"action": "Refund A-17", "args": args, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    view = modal(stack, question, "parley_open_form", CAROL)
    submit_modal(stack, view, CAROL, "amount", "80")
    got = result(temporal, wid)
    assert got == {
        "approved": True,
        "args": {"order": "A-17", "amount": 80},
        "edited": True,
        "changes": [["amount", 120, 80]],
        "reason": None,
        "by": CAROL,
        "standing": False,
        "receipt": None,  # this stack signs no receipts (tests/receipts/test_receipts_temporal.py does)
    }


def test_a_rejection_returns_its_reason(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    args = {"order": "A-18", "amount": 300}
    wid = start(temporal, "ApproveWorkflow", {"action": "Refund A-18", "args": args, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    submit_modal(stack, modal(stack, question, "parley_reject", DAVE), DAVE, "_reason", "over the limit")
    got = result(temporal, wid)
    assert (got["approved"], got["reason"], got["args"], got["by"]) == (False, "over the limit", args, DAVE)


# ---- expiry and cancellation -----------------------------------------------------------------------
def test_expiry_delivers_expired_or_the_items_defaults(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    plain = {**SHIP_REQUEST, "reason": "Expires plainly?"}
    with_defaults = {
        "reason": "Expires to defaults?",
        "on_expiry": "use_defaults",
        "items": [{"id": "ship", "text": "Ship", "type": "select", "options": ["yes", "no"], "default": "no"}],
    }
    plain_id = start(temporal, "AskWorkflow", {"request": plain, "channel": CHANNEL, "expires_in": 1})
    defaults_id = start(temporal, "AskWorkflow", {"request": with_defaults, "channel": CHANNEL, "expires_in": 1})
    got = result(temporal, plain_id)
    assert (got["status"], got["answers"], got["by"]) == ("expired", None, None)
    got = result(temporal, defaults_id)
    assert (got["status"], got["answers"]) == ("expired", {"ship": "no"})


def test_cancelling_the_workflow_locks_the_slack_message_as_cancelled(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)

    async def cancel() -> None:
        client = await Client.connect(temporal.address)
        await client.get_workflow_handle(wid).cancel()

    asyncio.run(cancel())
    stack.wait_for(
        "the question's message to be locked as cancelled",
        lambda: "Cancelled" in json.dumps(message_of(stack, question)),
        timeout=60.0,  # a worker carries out the cancel's effects; under load it may be busy a while
    )
    assert "parley_submit" not in json.dumps(message_of(stack, question))
    with pytest.raises(WorkflowFailureError):
        result(temporal, wid)
    assert status(temporal, wid) is WorkflowExecutionStatus.CANCELED
    assert stack.wait_for("the question to be cancelled", lambda: _status(stack, token, question["id"]) == "cancelled")


def test_a_cancel_before_the_workflow_learns_its_question_still_cancels_it(
    stack: SlackStack, temporal: TemporalDev, token: Token, held_worker: TemporalWorker
) -> None:
    """The question exists, but its create activity has not returned when the cancel comes."""
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL}, task_queue=HELD_QUEUE)
    [question] = questions_of(stack, token, wid)
    held = stack.data_dir / "held"
    key = question["temporal"]["key"]
    stack.wait_for("the create activity to hold its result", lambda: (held / f"{key}.created").exists())

    async def cancel() -> None:
        client = await Client.connect(temporal.address)
        await client.get_workflow_handle(wid).cancel()

    asyncio.run(cancel())
    stack.wait_for("the workflow to take the cancel", lambda: _cancel_taken(temporal, wid))
    (held / f"{key}.go").touch()
    stack.wait_for("the question to be cancelled", lambda: _status(stack, token, question["id"]) == "cancelled")
    stack.wait_for("the message locked", lambda: "parley_submit" not in json.dumps(message_of(stack, question)))
    with pytest.raises(WorkflowFailureError):
        result(temporal, wid)
    assert status(temporal, wid) is WorkflowExecutionStatus.CANCELED


def test_cancelling_the_awaiting_scope_cancels_the_question_and_the_workflow_goes_on(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    wid = start(temporal, "ScopeWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL, "after": 3})
    [question] = questions_of(stack, token, wid)
    assert result(temporal, wid) == "went on after cancelling the ask"
    stack.wait_for("the question to be cancelled", lambda: _status(stack, token, question["id"]) == "cancelled")
    stack.wait_for("the message locked", lambda: "parley_submit" not in json.dumps(message_of(stack, question)))


def test_parley_runs_cancel_delivers_cancelled(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    subprocess.run(
        [str(PARLEY), "runs", "cancel", question["id"]], env=stack.env(), capture_output=True, text=True, check=True
    )
    got = result(temporal, wid)
    assert (got["status"], got["question_id"], got["answers"]) == ("cancelled", question["id"], None)


def _cancel_taken(temporal: TemporalDev, wid: str) -> bool:
    """Whether a workflow task completed after the cancel request: the workflow code has seen it."""

    async def go() -> bool:
        client = await Client.connect(temporal.address)
        kinds = [e.event_type async for e in client.get_workflow_handle(wid).fetch_history_events()]
        asked = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED
        return asked in kinds and EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED in kinds[kinds.index(asked) :]

    return asyncio.run(go())


def _status(stack: SlackStack, token: Token, question_id: str) -> str:
    assert stack.http is not None
    return str(stack.http.get(f"/api/v1/questions/{question_id}", headers=token.auth).json()["status"])


# ---- quorum ----------------------------------------------------------------------------------------
def test_ask_each_with_quorum_two_of_three_under_three_simultaneous_clicks_delivers_one_signal(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    request = {**SHIP_REQUEST, "reason": "Sign off the release?"}
    people = [CAROL, DAVE, ERIN]
    wid = start(temporal, "AskEachWorkflow", {"request": request, "assignees": people, "quorum": 2, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    payloads = {user: submit_payload(stack, question, {"Ship": "yes", "How many": "3"}, user) for user in people}
    gate = threading.Barrier(3)
    answers: dict[str, int] = {}

    def click(user: str) -> None:
        gate.wait()
        answers[user] = stack.interact(payloads[user]).status_code

    clickers = [threading.Thread(target=click, args=(user,)) for user in people]
    for t in clickers:
        t.start()
    for t in clickers:
        t.join(30)
    assert sorted(answers.values()) == [200, 200, 200]
    got = result(temporal, wid)
    assert got["status"] == "answered" and got["question_id"] == question["id"]
    assert len(got["answers_by"]) == 2 and set(got["answers_by"]) < set(people)
    assert all(a == {"ship": "yes", "count": 3} for a in got["answers_by"].values())
    assert got["ignored"] == 0  # the workflow was signalled once
    stack.wait_for("the delivery to be recorded", lambda: signal_entries(stack, question["id"]))
    time.sleep(1.0)  # a second delivery, were there one, would be recorded by now
    assert [e["event"] for e in signal_entries(stack, question["id"])] == ["temporal signal delivered"]


# ---- who may signal a workflow ---------------------------------------------------------------------
def _refused(resp: httpx.Response) -> None:
    assert resp.status_code == 403, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    problem = resp.json()
    assert problem["status"] == 403 and "--temporal" in problem["detail"], problem
    assert problem["errors"][0]["loc"] == ["temporal", "workflow_id"]


def _asks(stack: SlackStack, who: Token, target: dict[str, str], amount: int = 999999) -> list[httpx.Response]:
    """`who` asks a question and an approval, each naming `target` as its Temporal workflow."""
    assert stack.http is not None
    approval = {"action": "Refund", "args": {"amount": amount}, "channel": CHANNEL, "temporal": target}
    question = {"request": SHIP_REQUEST, "channel": CHANNEL, "temporal": target}
    return [
        stack.http.post("/api/v1/questions", json=question, headers=who.auth),
        stack.http.post("/api/v1/approvals", json=approval, headers=who.auth),
    ]


def test_a_token_without_a_temporal_grant_is_refused_and_nothing_reaches_the_workflow(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    other = create_token(stack, "no-temporal-grant")
    for resp in _asks(stack, other, {"workflow_id": wid, "namespace": "default", "key": question["temporal"]["key"]}):
        _refused(resp)
    assert stack.http is not None
    assert stack.http.get("/api/v1/questions", headers=other.auth).json()["questions"] == []  # nothing was asked
    plain = stack.http.post("/api/v1/questions", json={"request": SHIP_REQUEST, "channel": CHANNEL}, headers=other.auth)
    assert plain.status_code == 201, plain.text  # the same token asks without a Temporal target as before
    stack.http.post(f"/api/v1/questions/{plain.json()['id']}/cancel", headers=other.auth)
    click_submit(stack, question, {"Ship": "yes", "How many": "6"}, CAROL)
    got = result(temporal, wid)
    assert (got["status"], got["answers"], got["by"], got["ignored"]) == (
        "answered",
        {"ship": "yes", "count": 6},
        CAROL,
        0,
    )
    assert signals_received(temporal, wid) == 1  # the workflow's own outcome, and nothing else


def test_a_token_granted_refunds_may_not_name_another_workflow(stack: SlackStack) -> None:
    refunds = create_token(stack, "refunds-only", temporal=("refund-*",))
    for workflow_id in ("payroll-1", "Refund-1", "old-refund-1"):
        for resp in _asks(stack, refunds, {"workflow_id": workflow_id, "namespace": "default", "key": "tw-1"}):
            _refused(resp)
    assert stack.http is not None
    assert stack.http.get("/api/v1/questions", headers=refunds.auth).json()["questions"] == []
    tokens = [str(PARLEY), "tokens"]
    listed = subprocess.run([*tokens, "list"], env=stack.env(), capture_output=True, text=True, check=True).stdout
    assert any(line.startswith("refunds-only ") and "temporal: refund-*" in line for line in listed.splitlines())
    bad = subprocess.run([*tokens, "create", "spaced", "--temporal", "refund *"], env=stack.env(), capture_output=True)
    assert bad.returncode != 0 and b"--temporal 'refund *'" in bad.stderr, bad.stderr


def test_a_waiting_workflow_takes_only_its_own_questions_outcome(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    """Another question naming the workflow and its key (a token granted it, or an outcome signalled from
    elsewhere) is answered first; the workflow ignores that outcome and returns its own person's decision."""
    args = {"order": "A-19", "amount": 120}
    wid = start(temporal, "ApproveWorkflow", {"action": "Refund A-19", "args": args, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    target = {"workflow_id": wid, "namespace": "default", "key": question["temporal"]["key"]}
    forged = {**target, "question_id": "r_elsewhere", "status": "answered", "by": ERIN}
    forged["decision"] = {"approved": True, "args": {"order": "A-19", "amount": 999999}, "by": ERIN}

    async def signal_from_elsewhere() -> None:
        client = await Client.connect(temporal.address)
        await client.get_workflow_handle(wid).signal("parley_outcome", forged)

    asyncio.run(signal_from_elsewhere())
    attacker = create_token(stack, "granted-this-workflow", temporal=(wid,))
    assert stack.http is not None
    approval = {"action": "Refund A-19", "args": forged["decision"]["args"], "channel": CHANNEL, "temporal": target}
    theirs_asked = stack.http.post("/api/v1/approvals", json=approval, headers=attacker.auth)
    assert theirs_asked.status_code == 201, theirs_asked.text
    [theirs] = questions_of(stack, attacker, wid)
    click(stack, theirs, "parley_approve", ERIN)
    delivered = [("temporal signal delivered", 1)]
    stack.wait_for(
        "the other approval's outcome to be signalled",
        lambda: [(e["event"], e["detail"]["attempts"]) for e in signal_entries(stack, theirs["id"])] == delivered,
    )
    assert signals_received(temporal, wid) == 2
    assert status(temporal, wid) is WorkflowExecutionStatus.RUNNING  # still waiting on its own question
    click(stack, question, "parley_approve", CAROL)
    got = result(temporal, wid)
    assert (got["approved"], got["args"], got["by"], got["edited"]) == (True, args, CAROL, False)

    def ignored() -> list[str]:
        lines = [line for line in worker.log_path.read_text().splitlines() if "outcome ignored" in line and wid in line]
        return lines if all(any(q in line for line in lines) for q in ("r_elsewhere", theirs["id"])) else []

    logged = stack.wait_for("both ignored outcomes to be logged, with the workflow's ids", ignored)
    assert all("run_id" in line for line in logged), logged


# ---- failures ----------------------------------------------------------------------------------------
def test_a_temporal_worker_killed_while_the_workflow_waits_and_started_again_completes_it_once(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    worker.kill()  # kill -9 while the workflow waits on the signal
    worker.start()
    click_submit(stack, question, {"Ship": "no", "How many": "4"}, ERIN)
    got = result(temporal, wid, timeout=60)
    assert (got["status"], got["answers"], got["by"]) == ("answered", {"ship": "no", "count": 4}, ERIN)
    stack.wait_for("the delivery to be recorded", lambda: signal_entries(stack, question["id"]))
    assert [e["event"] for e in signal_entries(stack, question["id"])] == ["temporal signal delivered"]
    assert status(temporal, wid) is WorkflowExecutionStatus.COMPLETED


def test_temporal_unreachable_when_the_answer_arrives_the_delivery_retries_until_it_is_back(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    temporal.stop()
    try:
        click_submit(stack, question, {"Ship": "yes", "How many": "9"}, CAROL)

        def retried() -> dict[str, Any] | None:
            assert stack.http is not None
            view = stack.http.get(f"/api/v1/questions/{question['id']}", headers=token.auth).json()["temporal"]
            return view if view["attempts"] >= 3 and view["status"] == "pending" else None

        waiting = stack.wait_for("the delivery to be retried", retried, timeout=30)
        assert waiting["last_error"] and waiting["delivered_at"] is None
    finally:
        temporal.start()
    got = result(temporal, wid, timeout=60)
    assert (got["status"], got["answers"], got["by"]) == ("answered", {"ship": "yes", "count": 9}, CAROL)
    [entry] = signal_entries(stack, question["id"])
    assert entry["event"] == "temporal signal delivered" and entry["detail"]["attempts"] >= 3


# ---- the example -------------------------------------------------------------------------------------
def test_the_refund_example_asks_with_the_amount_editable_and_writes_the_decision(
    stack: SlackStack, temporal: TemporalDev, token: Token, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "PARLEY_TEMPORAL_ADDRESS": temporal.address,
        "TEMPORAL_TASK_QUEUE": "refunds-example",
        "PARLEY_URL": f"http://127.0.0.1:{stack.port}",
        "PARLEY_TOKEN": token.token,
        "PARLEY_CHANNEL": CHANNEL,
    }
    refund = tmp_path / "refund.json"
    refund.write_text(json.dumps({"order": "B-42", "amount": 250, "reason": "damaged in transit"}))
    with (tmp_path / "worker.log").open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-u", str(EXAMPLE), "worker"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
        )
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == b"worker ready"
        starter = subprocess.Popen(
            [sys.executable, str(EXAMPLE), "start", str(refund)], env=env, stdout=subprocess.PIPE, text=True
        )

        def asked() -> dict[str, Any] | None:
            assert stack.http is not None
            page = stack.http.get("/api/v1/questions", params={"status": "waiting"}, headers=token.auth).json()
            found = [q for q in page["questions"] if "B-42" in q["reason"] and q["message_ts"] and is_open(stack, q)]
            return found[0] if found else None

        question = stack.wait_for("the refund's approval", asked)
        assert question["temporal"]["workflow_id"].startswith("refund-")
        view = modal(stack, question, "parley_open_form", DAVE)
        assert [b["block_id"].split("|")[-1] for b in view["blocks"] if b["type"] == "input"] == ["amount"]
        submit_modal(stack, view, DAVE, "amount", "200")
        out, _ = starter.communicate(timeout=60)
    finally:
        stop_process_group(worker)
    expected = {"order": "B-42", "approved": True, "amount": 200, "edited": True, "by": DAVE, "reason": None}
    assert json.loads(out) == expected
    assert json.loads((tmp_path / "refund.decision.json").read_text()) == expected


def test_a_parley_worker_killed_while_it_signals_the_workflow_sees_the_outcome_once(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker, unreachable: int
) -> None:
    """A worker's delivery job signals, killed -9 mid-attempt, and a new worker delivers once.

    The answer is clicked at a `parley serve` that cannot reach Temporal, so its own attempt fails
    and a worker's job signals. Temporal is frozen (SIGSTOP), so that attempt hangs. Every `parley
    worker` is killed -9 in it. A new worker retries the abandoned delivery once its RQ entry lapses,
    about a minute and a half later. Either way the workflow takes the answer once:

    - The killed attempt was still connecting: the retry delivers it, attempt 3.
    - A worker already connected sends at once, so the killed attempt's signal may sit in the
      frozen server's socket. The workflow takes that one as soon as Temporal continues, and
      has ended by the retry. Temporal answers the retry's request id as taken: delivered, attempt 3.
    """
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL, "linger": 5})
    [question] = questions_of(stack, token, wid)
    assert temporal.proc is not None
    os.killpg(temporal.proc.pid, signal.SIGSTOP)
    try:
        resp = interact_at(unreachable, submit_payload(stack, question, {"Ship": "yes", "How many": "5"}, DAVE))
        assert resp.status_code == 200, resp.text

        def attempting() -> bool:  # the direct attempt failed: the job's is the second
            assert stack.http is not None
            view = stack.http.get(f"/api/v1/questions/{question['id']}", headers=token.auth).json()["temporal"]
            return bool(view["attempts"] == 2 and view["status"] == "pending")

        stack.wait_for("the job's attempt to start", attempting)
        time.sleep(0.5)  # inside the attempt: connecting to, or signalling, the frozen server
        workers = [p for p in stack.procs if "worker" in " ".join(map(str, p.args))]
        for proc in workers:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            stack.procs.remove(proc)
    finally:
        os.killpg(temporal.proc.pid, signal.SIGCONT)
    stack.spawn_worker("worker-after-kill")
    got = result(temporal, wid, timeout=240)
    assert (got["status"], got["answers"], got["by"]) == ("answered", {"ship": "yes", "count": 5}, DAVE)
    assert got["ignored"] == 0 and signals_received(temporal, wid) == 1  # one request id: Temporal kept one
    # Either way, the retry that records it comes once the killed job's RQ entry lapses.
    entries = stack.wait_for("the delivery to be recorded", lambda: signal_entries(stack, question["id"]), timeout=240)
    assert [(e["event"], e["detail"]["attempts"]) for e in entries] == [("temporal signal delivered", 3)], entries


def test_a_retry_after_the_workflow_took_its_signal_and_ended_is_taken_not_refused(
    stack: SlackStack, temporal: TemporalDev, token: Token, worker: TemporalWorker
) -> None:
    """What the test above relies on, shown on the dev server: a repeat is answered as taken.

    The question is answered in Slack and its signal delivered; the workflow ends. The same
    signal, sent again under its request id (a retry whose first attempt's answer was lost), is
    taken without reaching the workflow again. Another request id is refused: the workflow ended.
    """
    wid = start(temporal, "AskWorkflow", {"request": SHIP_REQUEST, "channel": CHANNEL})
    [question] = questions_of(stack, token, wid)
    resp = click_submit(stack, question, {"Ship": "yes", "How many": "3"}, CAROL)
    assert resp.status_code == 200, resp.text
    assert result(temporal, wid)["answers"] == {"ship": "yes", "count": 3}
    assert status(temporal, wid) == WorkflowExecutionStatus.COMPLETED
    assert stack.redis is not None
    record = QuestionStore(stack.redis).get(question["id"])
    assert record is not None and record.signal is not None and record.temporal is not None
    cfg = TemporalConfig(address=temporal.address)
    payload = json.loads(record.signal.payload)
    client = SignalClient()
    client.call(client.signal(cfg, record.temporal, payload, request_id(record.signal)), 30)
    with pytest.raises(SignalRefused, match="Temporal refused the signal"):
        client.call(client.signal(cfg, record.temporal, payload, "parley-never-sent"), 30)
    assert signals_received(temporal, wid) == 1
