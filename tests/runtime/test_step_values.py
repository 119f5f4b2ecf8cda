"""What a step returns, and when it runs: the same value in every execution, never after a park.

Real Redis and RQ (an in-process SimpleWorker); the agents are `tests/agents_for_tests.py`'s.
"""

from __future__ import annotations

from pathlib import Path

import agents_for_tests
import pytest
from effect_counters import count
from redis import Redis
from runtime_helpers import make_runtime, parked, paused, start, work

from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.store import keys
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
RED = [Answer(id="colour", choice="red")]


def test_a_step_returns_what_its_record_holds_in_the_first_execution_as_in_a_replay(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id, iid = parked(rt, "t-values")
    accept(rt, iid, "U1", RED)
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    first, replay = agents_for_tests.SEEN[run_id]
    assert first == replay == ([1, 2], {"1": "one"})  # a tuple was a tuple, and key 1 an int, until the replay


def test_a_value_too_deep_for_json_fails_the_run_once_and_its_effect_runs_once(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-nested")
    work(rt)
    failed = rt.store.get(run_id)
    assert failed.status is RunStatus.FAILED and "not JSON" in failed.error
    assert count(tmp_path, run_id, "charge") == 1  # it was retried, charging again, three times


def test_a_step_value_past_what_a_step_records_fails_the_run_once(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-huge-step")
    work(rt)
    failed = rt.store.get(run_id)
    assert failed.status is RunStatus.FAILED and "a step records 67108864" in failed.error
    assert count(tmp_path, run_id, "fetch") == 1


def test_a_step_in_a_finally_around_questions_runs_once_and_never_at_a_park(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id, first = parked(rt, "t-finally")
    assert count(tmp_path, run_id, "release") == 0  # the park's finally ran nothing
    accept(rt, first, "U1", RED)
    work(rt)
    second = paused(rt, run_id)
    assert count(tmp_path, run_id, "release") == 0
    accept(rt, second, "U1", RED)
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert count(tmp_path, run_id, "release") == 1


def test_a_huge_exception_is_kept_clipped_in_the_runs_error_and_history(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-loud")
    work(rt)
    failed = rt.store.get(run_id)
    assert failed.status is RunStatus.FAILED and failed.error.endswith("more characters)")
    assert len(failed.error) < 5000
    assert r.memory_usage(keys.history(run_id)) < 100_000  # it was stored whole eight times: 8 MB


def test_a_history_entry_is_added_once_however_often_the_run_replays(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id, first = parked(rt, "t-history")
    accept(rt, first, "U1", RED)
    work(rt)
    accept(rt, paused(rt, run_id), "U1", RED)
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    noted = [h.detail for h in rt.store.history(run_id) if h.event == "tokens"]
    assert noted == [{"used": 100}, {"used": 7}, {"used": 50}]  # each replay added the others again


def test_an_execution_past_its_timeout_fails_at_once_never_running_its_step_again(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path, run_timeout=1.0)
    run_id = start(rt, "t-slow-step")
    work(rt)
    failed = rt.store.get(run_id)
    assert failed.status is RunStatus.FAILED and "PARLEY_RUN_TIMEOUT (1 s)" in failed.error
    assert count(tmp_path, run_id, "deploy") == 1  # retried, it deployed four times
    unbounded = make_runtime(r, tmp_path, run_timeout=0)
    assert unbounded.queue.enqueue(print).timeout == -1  # 0: no bound, not RQ's 180 s
