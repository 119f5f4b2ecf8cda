"""The bench's own seeding writes what Parley's store accepts: a seeded question's answer is taken
once, and runs seeded as finished are finished. Measurements 7 and 8 (and `bench.profile worker`)
stop on a refused or repeated answer, so a change to the store's replies must keep these true."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the bench is run from the repository root; it is not an installed package

from bench.agents import AGENT, three_item_request  # noqa: E402
from bench.m_retention import seed_finished  # noqa: E402
from bench.m_workers import _close  # noqa: E402
from bench.seed import seed_paused  # noqa: E402
from workers.runtime.wiring import Runtime  # noqa: E402
from workers.store.records import InterruptState, RunStatus  # noqa: E402

pytestmark = pytest.mark.integration


def test_a_seeded_question_is_answered_once(r: redis.Redis) -> None:
    rt = Runtime.build(r)
    (run,) = seed_paused(rt.store, 1, three_item_request(), agent=AGENT, user_for=lambda i: "U0B000")
    _close(rt, run)
    closed = rt.store.interrupt(run.iid)
    assert closed is not None and closed.state is InterruptState.ANSWERED and closed.answered_by == "U0B000"
    assert rt.store.get(run.run_id).status is RunStatus.QUEUED  # accepted: the run waits for its resume
    with pytest.raises(RuntimeError, match="not accepted anew"):
        _close(rt, run)  # the same answer again is not a new acceptance


def test_runs_seeded_as_finished_are_finished(r: redis.Redis) -> None:
    rt = Runtime.build(r)
    ids = seed_finished(rt.store, 3)
    assert len(ids) == 3
    assert [rt.store.get(run_id).status for run_id in ids] == [RunStatus.SUCCEEDED] * 3
    assert rt.store.count(RunStatus.SUCCEEDED) == 3 and rt.store.count(RunStatus.PAUSED) == 0
