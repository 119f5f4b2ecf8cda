"""A worker renews the lease of the run it executes for as long as the agent runs, from one thread per process.

The run waits at a gate (`t-gate`) for several lease lengths; meanwhile its `lease_until` keeps
moving ahead, so the sweep finds nothing lapsed. Once the execution ends, no renewal follows.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from redis import Redis
from runtime_helpers import held_at_gate, runtime_and_host, start

from workers.runtime.sweep import sweep
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

TTL = 0.6


def _renewers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "parley-leases"]


def test_the_lease_is_renewed_while_the_agent_runs_and_not_after(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path, lease_ttl=TTL)
    run_id = start(rt, "t-gate")
    seen: list[float] = []
    with held_at_gate(rt, run_id) as out:
        for _ in range(8):  # 2.4 s: four lease lengths
            time.sleep(TTL / 2)
            seen.append(rt.store.get(run_id).lease_until)
            assert sweep(rt).lapsed == []  # the lease never lapsed
    assert out == ["succeeded"]
    assert len(set(seen)) >= 4 and seen == sorted(seen)  # renewed about every third of the lease
    assert seen[-1] > seen[0] + 2 * TTL
    ended = rt.store.get(run_id)
    assert ended.status is RunStatus.SUCCEEDED and ended.lease_until == 0
    time.sleep(TTL)
    assert rt.store.get(run_id).lease_until == 0  # nothing renewed it after the execution ended


def test_one_thread_renews_the_leases_of_every_execution_in_a_process(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path, lease_ttl=TTL)
    runs = [start(rt, "t-gate") for _ in range(3)]
    with held_at_gate(rt, runs[0]), held_at_gate(rt, runs[1]), held_at_gate(rt, runs[2]):
        before = {run_id: rt.store.get(run_id).lease_until for run_id in runs}
        time.sleep(TTL)
        after = {run_id: rt.store.get(run_id).lease_until for run_id in runs}
        assert all(after[run_id] > before[run_id] for run_id in runs)  # each lease renewed
        assert len(_renewers()) == 1
    assert all(rt.store.get(run_id).status is RunStatus.SUCCEEDED for run_id in runs)
