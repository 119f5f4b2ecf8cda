"""A Temporal workflow that asks a person, through Parley, to approve a refund whose amount they may edit.

The workflow reads the refund from a local JSON file (`{"order": "A-17", "amount": 120, "reason": "..."}`),
asks for approval in Slack with the amount editable, and writes the decision next to it. Its worker
is in this file too.

    eval "$(parley tokens create refunds --temporal 'refund-*')"   # a token granted the refund workflows
    export PARLEY_URL=http://127.0.0.1:3000 PARLEY_CHANNEL=C0123456789
    export PARLEY_TEMPORAL_ADDRESS=127.0.0.1:7233                # the Temporal Parley signals, too
    python docs/examples/temporal_refund.py worker &            # the Temporal worker
    python docs/examples/temporal_refund.py start refund.json    # one refund; waits for the decision

`PARLEY_TEMPORAL_ADDRESS` (default `127.0.0.1:7233`, `temporal server start-dev`'s; the same
setting Parley's workers signal the workflow through) and `TEMPORAL_TASK_QUEUE` (default
`refunds`) say where the workflow runs. See docs/integrations.md, "Temporal".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from parley.client import Parley
    from workers.integrations import temporal as parley_temporal


@activity.defn
async def read_refund(path: str) -> dict[str, Any]:
    """The refund to decide on, from its file."""
    return dict(json.loads(Path(path).read_text()))


@activity.defn
async def write_decision(path: str, decision: dict[str, Any]) -> str:
    """The decision, written beside the refund as `<name>.decision.json`; returns that path."""
    out = Path(path).with_suffix(".decision.json")
    out.write_text(json.dumps(decision, indent=2) + "\n")
    return str(out)


@workflow.defn
class RefundWorkflow:
    @workflow.run
    async def run(self, path: str, channel: str) -> dict[str, Any]:
        step = timedelta(seconds=30)
        refund = await workflow.execute_activity(read_refund, path, start_to_close_timeout=step)
        decision = await parley_temporal.approve(
            f"Refund order {refund['order']}: {refund.get('reason', '')}".strip(": "),
            {"order": refund["order"], "amount": refund["amount"]},
            channel=channel,
            editable=["amount"],  # the approver may lower (or raise) the amount; the order stays
        )
        result = {
            "order": refund["order"],
            "approved": decision.approved,
            "amount": decision.args["amount"] if decision.approved else 0,
            "edited": decision.edited,
            "by": decision.by,
            "reason": decision.reason,
        }
        await workflow.execute_activity(write_decision, args=[path, result], start_to_close_timeout=step)
        return result


async def serve(client: Client, task_queue: str) -> None:
    parley = Parley(os.environ["PARLEY_URL"], token=os.environ["PARLEY_TOKEN"])
    activities = [read_refund, write_decision, *parley_temporal.ParleyActivities(parley).activities()]
    async with Worker(client, task_queue=task_queue, workflows=[RefundWorkflow], activities=activities):
        print("worker ready", flush=True)
        await asyncio.Event().wait()


async def start(client: Client, task_queue: str, path: str) -> None:
    channel = os.environ["PARLEY_CHANNEL"]
    result = await client.execute_workflow(
        RefundWorkflow.run,
        args=[str(Path(path).resolve()), channel],
        id=f"refund-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
    )
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("worker", help="run the Temporal worker")
    started = sub.add_parser("start", help="start a refund's workflow and wait for its decision")
    started.add_argument("path", help="the refund's JSON file")
    args = parser.parse_args()

    async def go() -> None:
        client = await Client.connect(os.environ.get("PARLEY_TEMPORAL_ADDRESS", "127.0.0.1:7233"))
        task_queue = os.environ.get("TEMPORAL_TASK_QUEUE", "refunds")
        if args.command == "worker":
            await serve(client, task_queue)
        else:
            await start(client, task_queue, args.path)

    asyncio.run(go())
    # A client-only process may crash in Temporal's runtime threads as Python shuts down
    # (temporalio/sdk-python#300): the decision is printed, so end without that shutdown.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
