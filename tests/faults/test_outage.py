"""Redis away for less than a lease: nothing a run recorded, or was about to record, happens twice.

A worker that finished a step's side effect (or posted the run's final answer) while Redis
is unreachable must hold on to the run and record it when Redis is back, for as long as its
lease holds; giving up would let the sweep hand the run to another worker, whose replay
would repeat the unrecorded effect. These scenarios need a lease longer than the outage
and an outage longer than redis-py's own retries (at most 2 + 4 + 8 s of backoff), so
they run on a stack of their own: one worker with a 30 s lease, Redis down for 15 s.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faults.agents import count
from faults.conftest import FaultStack, Ledger, RedisServer, receipt_key
from faults.invariants import DONE
from faults.scenarios import Ctx

pytestmark = pytest.mark.faults

LEASE_TTL = 30.0
OUTAGE = 15.0  # longer than redis-py's retries give up after, well inside the lease


@pytest.fixture(scope="module")
def outage_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultStack]:
    server = RedisServer(tmp_path_factory.mktemp("outage-redis"))
    server.start()
    data_dir = tmp_path_factory.mktemp("outage-stack")
    stack = FaultStack(
        server.url,
        data_dir,
        workers=1,
        extra_env={
            "PARLEY_AGENTS": "slack_agents,faults.agents",
            "PARLEY_RECEIPT_KEY": str(receipt_key(data_dir)),  # the checker holds every close to its receipt
            "PARLEY_LEASE_TTL": str(LEASE_TTL),
            "PARLEY_SWEEP_INTERVAL": "0.5",
            "PARLEY_RETRY_DELAYS": "0",
            "PARLEY_REQUEUE_GRACE": "1",
        },
        server=server,
    )
    stack.start()
    try:
        yield stack
    finally:
        if server.proc is None:
            server.start()
        stack.stop()
        server.kill()


def _outage(ctx: Ctx) -> None:
    """Redis shut down cleanly (its append-only file flushed) for `OUTAGE` seconds."""
    ctx.stack.server.shutdown()
    ctx.ledger.fault("redis down for less than a lease")
    time.sleep(OUTAGE)
    ctx.stack.server.start()


def _final_answers(ctx: Ctx, run_ref: object) -> list[dict]:
    return [m for m in ctx.stack.thread(run_ref) if str(m.get("text", "")).startswith(DONE)]  # type: ignore[arg-type]


def test_an_outage_over_the_write_after_a_step_does_not_repeat_the_step(
    outage_stack: FaultStack, ledger: Ledger
) -> None:
    ctx = Ctx(outage_stack, random.Random(ledger.seed), ledger)
    gate = f"outage-step-{ledger.seed}"
    r = ctx.start(apply_gate=gate)
    colour = ctx.answer(r)
    inside = Path(outage_stack.data_dir) / "gates" / f"{gate}.inside"
    outage_stack.wait_for("the resumed run to be inside its step", inside.exists, timeout=30)
    outage_stack.server.shutdown()
    ctx.open_gate(gate)  # the side effect happens now; its record meets the outage
    ledger.fault("redis down for less than a lease")
    time.sleep(OUTAGE)
    outage_stack.server.start()

    ctx.wait_status(r, "succeeded", timeout=LEASE_TTL + 30)
    assert ctx.result(r).startswith(f"colour {colour},")
    assert count(outage_stack.data_dir, r.run_id, "step.apply") == 1
    assert len(_final_answers(ctx, r)) == 1
    ctx.checker.check([r])


def test_an_outage_while_the_final_answer_is_posted_does_not_post_it_twice(
    outage_stack: FaultStack, ledger: Ledger
) -> None:
    ctx = Ctx(outage_stack, random.Random(ledger.seed), ledger)
    r = ctx.start()
    q = ctx.question(r)
    outage_stack.settle(quiet=0.3)
    # After the answer the worker updates the question, then posts the final answer: slowly.
    outage_stack.ws.faults.delay_next("chat.postMessage", 3.0)
    colour = ctx.answer(r, q)
    assert outage_stack.redis is not None
    journal = f"parley:run:{r.run_id}:journal"
    outage_stack.wait_for(
        "the final answer to be under way", lambda: outage_stack.redis.hget(journal, "fx:final") == b'"intent"', 30
    )
    _outage(ctx)  # the post lands while Redis is away; its "done" is written when Redis is back

    ctx.wait_status(r, "succeeded", timeout=LEASE_TTL + 30)
    assert ctx.result(r).startswith(f"colour {colour},")
    outage_stack.settle(quiet=1.0)
    assert len(_final_answers(ctx, r)) == 1, _final_answers(ctx, r)
    ctx.checker.check([r])
