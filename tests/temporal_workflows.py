"""Workflows the Temporal tests run, and their worker: `python -m temporal_workflows` (tests on PYTHONPATH).

The worker reads `TEMPORAL_ADDRESS`, `TEMPORAL_TASK_QUEUE`, `PARLEY_URL`, `PARLEY_TOKEN` and, to hold each
created question's activity for a test, `PARLEY_TEST_HOLD_DIR`. It registers
these workflows and Parley's activities, and prints `ready` once it polls.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from parley.client import Parley
    from workers.integrations import temporal as parley_temporal


def _outcome(outcome: parley_temporal.QuestionOutcome) -> dict[str, Any]:
    """What the tests read back, with when the code after the `await` ran (the workflow task's time)."""
    return {
        "question_id": outcome.question_id,
        "status": outcome.status,
        "answers": outcome.answers,
        "answers_by": outcome.answers_by,
        "by": outcome.by,
        "cancelled_by": outcome.cancelled_by,
        "receipt": outcome.receipt,
        "resumed_at": workflow.now().timestamp(),
        "ignored": workflow.instance()._parley_waits.ignored,  # repeated deliveries the wait helper dropped
    }


@workflow.defn
class AskWorkflow:
    """One question: `request`, `channel`, `assignees`, `expires_in` from the argument."""

    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        outcome = await parley_temporal.ask(
            args["request"],
            channel=args.get("channel"),
            assignees=args.get("assignees"),
            expires_in=args.get("expires_in"),
        )
        resumed = _outcome(outcome)
        if args.get("linger"):  # stay a while, so that a repeated delivery would reach this run
            await asyncio.sleep(args["linger"])
        return {**resumed, "ignored": workflow.instance()._parley_waits.ignored}


@workflow.defn
class GatherWorkflow:
    """Several questions at once: each is its own question, each outcome its own."""

    @workflow.run
    async def run(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        asks = [parley_temporal.ask(request, channel=args["channel"]) for request in args["requests"]]
        return [_outcome(o) for o in await asyncio.gather(*asks)]


@workflow.defn
class ScopeWorkflow:
    """Asks, and cancels the task awaiting the ask after `after` seconds; then says it went on."""

    @workflow.run
    async def run(self, args: dict[str, Any]) -> str:
        task = asyncio.ensure_future(parley_temporal.ask(args["request"], channel=args["channel"]))
        await asyncio.sleep(args["after"])
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "went on after cancelling the ask"
        return "the ask was not cancelled"


@workflow.defn
class ApproveWorkflow:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        decision = await parley_temporal.approve(
            args["action"], args["args"], channel=args["channel"], expires_in=args.get("expires_in")
        )
        return decision.model_dump(mode="json")


@workflow.defn
class AskEachWorkflow:
    @workflow.run
    async def run(self, args: dict[str, Any]) -> dict[str, Any]:
        outcome = await parley_temporal.ask_each(
            args["request"], args["assignees"], quorum=args["quorum"], channel=args["channel"]
        )
        return _outcome(outcome)


@workflow.defn
class SignalWaitWorkflow:
    """Temporal's own signal -> wait_condition, for the bench: the time the code after the wait ran."""

    def __init__(self) -> None:
        self.got = False

    @workflow.signal
    def poke(self) -> None:
        self.got = True

    @workflow.run
    async def run(self) -> float:
        await workflow.wait_condition(lambda: self.got)
        return workflow.now().timestamp()


WORKFLOWS = [AskWorkflow, GatherWorkflow, ScopeWorkflow, ApproveWorkflow, AskEachWorkflow, SignalWaitWorkflow]


class HeldParley:
    """A `Parley` whose `submit` holds its result until the test opens the question's gate.

    With `PARLEY_TEST_HOLD_DIR` set, each created question writes `<key>.created` there. The
    activity returns only once `<key>.go` exists. So a test can act while the question exists
    and the workflow has not yet learnt its id.
    """

    def __init__(self, parley: Parley, folder: Path) -> None:
        self.parley, self.folder = parley, folder
        self.submit_approval, self.cancel = parley.submit_approval, parley.cancel

    def submit(self, request: Any, *, idempotency_key: str, **fields: Any) -> str:
        question_id = self.parley.submit(request, idempotency_key=idempotency_key, **fields)
        (self.folder / f"{idempotency_key}.created").write_text(question_id)
        deadline = time.monotonic() + 25  # inside the activity's 30 s: a test that never opens it fails, not hangs
        while not (self.folder / f"{idempotency_key}.go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return question_id


async def serve() -> None:
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"])
    parley: Any = Parley(os.environ["PARLEY_URL"], token=os.environ["PARLEY_TOKEN"])
    if held := os.environ.get("PARLEY_TEST_HOLD_DIR"):
        parley = HeldParley(parley, Path(held))
    activities = parley_temporal.ParleyActivities(parley).activities()
    worker = Worker(client, task_queue=os.environ["TEMPORAL_TASK_QUEUE"], workflows=WORKFLOWS, activities=activities)
    async with worker:
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        sys.exit(0)
