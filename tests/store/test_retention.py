"""Retention: finished runs and all they own leave Redis after `PARLEY_RETENTION`; live runs stay.

Runs are made by real executions (in-process SimpleWorker, real Redis), and what is left
is read back from the whole database: every key name, hash, list, set and sorted set.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from agents_for_tests import bump
from noting_redis import NotingRedis
from redis import Redis
from rq.job import Job
from runtime_helpers import make_runtime, work

from parley import cli
from parley.bootstrap import runtime_settings
from parley.settings import load, parse_duration
from workers.exceptions import ConfigError
from workers.interaction import Answer
from workers.runtime import admin
from workers.runtime.acceptance import accept
from workers.runtime.queues import enqueue_run
from workers.runtime.retention import purge_finished
from workers.runtime.sweep import sweep
from workers.runtime.wiring import Runtime
from workers.store import job_ids, keys
from workers.store.pieces import gathered
from workers.store.records import RunStatus
from workers.store.retention import Retention
from workers.store.runs import RunStore

pytestmark = pytest.mark.integration

RED = [Answer(id="colour", choice="red")]
LATER = 3600.0  # how far past the runs' last update the purges in these tests look


def start(rt: Runtime, agent_name: str, params: dict[str, Any] | None = None, thread: str = "") -> str:
    """Start a run; with `thread`, the host has started a Slack-like thread for it (a thread key)."""
    conversation = {"host": "test", "team": "T1"}
    run = rt.store.create(agent_name, json.dumps(params or {}), "U1", conversation)
    if thread:
        rt.store.set_thread(run.id, {**conversation, "channel": "C1", "thread_ts": thread})
    enqueue_run(rt.queue, run.id, run.job)
    return run.id


def answer(rt: Runtime, run_id: str) -> str:
    iid = rt.store.get(run_id).interrupt
    accept(rt, iid, "U1", RED)
    work(rt)
    return iid


def mentions(r: Redis, needles: set[str]) -> list[str]:
    """Every key of the database whose name or content mentions one of `needles`."""
    found = []
    for key in r.scan_iter("*"):
        kind = r.type(key).decode()
        if kind == "string":
            items: list[Any] = [r.get(key)]
        elif kind == "hash":
            items = [x for pair in r.hgetall(key).items() for x in pair]
        elif kind == "zset":
            items = r.zrange(key, 0, -1)
        elif kind == "set":
            items = list(r.smembers(key))
        elif kind == "list":
            items = r.lrange(key, 0, -1)
        else:
            items = [repr(r.dump(key))]
        words = [x.decode(errors="replace") if isinstance(x, bytes) else str(x) for x in items]
        text = " ".join([key.decode(), *words])
        found += [f"{key.decode()} ({kind}) mentions {n}" for n in sorted(needles) if n in text]
    return found


def _s(value: bytes) -> str:
    return value.decode()


def owned(r: Redis, run_id: str) -> dict[bytes, bytes]:
    """The run's own Parley keys, dumped: record, journal, history, questions, thread."""
    names = [keys.run(run_id), keys.journal(run_id), keys.history(run_id)]
    record = r.hgetall(keys.run(run_id))
    assert record, f"{run_id} has no record"
    if record.get(b"interrupt"):
        names.append(keys.interrupt(record[b"interrupt"].decode()))
    conversation = json.loads(gathered({_s(k): _s(v) for k, v in record.items()}, "conversation") or "{}")
    if conversation.get("thread_ts"):
        names.append(keys.thread(conversation["channel"], conversation["thread_ts"]))
    return {name.encode(): r.dump(name) for name in names}


def interrupts_of(rt: Runtime, run_id: str) -> set[str]:
    """Every question the run asked, as its history tells it (expired attempts included)."""
    return {h.detail["interrupt_id"] for h in rt.store.history(run_id) if "interrupt_id" in h.detail}


def existing_jobs(rt: Runtime, run_id: str, iids: set[str]) -> list[str]:
    run = rt.store.get(run_id)
    ids = job_ids.of_run(run_id, sorted(iids), run.epoch, run.job)
    return [job_id for job_id in ids if Job.exists(job_id, connection=rt.redis)]


def finished_runs(rt: Runtime) -> dict[str, str]:
    """One run of every final status, each made the way it happens in production."""
    answered = start(rt, "t-ask", thread="1700000000.000100")
    broken = start(rt, "t-flaky", {"fail": "always"})
    # Long enough for `retried`'s fresh question to be answered on a loaded machine; the sweep
    # below looks from past it.
    doomed = start(rt, "t-ask", {"expires_in": 30})
    retried = start(rt, "t-ask", {"expires_in": 30}, thread="1700000000.000200")
    cancelled = start(rt, "t-ask", {"assignees": ["U1", "U7"]})
    work(rt)
    answer(rt, answered)
    assert sweep(rt, now=time.time() + 60).expired  # both questions of `doomed` and `retried` expire
    work(rt)
    admin.retry(rt, retried, by="U-admin")  # asks afresh: the expired attempt leaves its journal
    work(rt)
    answer(rt, retried)
    admin.cancel(rt, cancelled, by="U-admin")
    runs = {
        "succeeded": answered,
        "failed": broken,
        "expired": doomed,
        "succeeded after a retry": retried,
        "cancelled": cancelled,
    }
    for what, run_id in runs.items():
        assert rt.store.get(run_id).status.value == what.split()[0], what
    return runs


def live_runs(rt: Runtime) -> dict[str, str]:
    """A paused, a queued and a running run (claimed by a worker that holds its lease)."""
    waiting = start(rt, "t-ask", thread="1700000000.000300")
    work(rt)
    queued = start(rt, "t-ask")
    running = start(rt, "t-ask")
    ok, _, _ = rt.store.transition(
        running, [RunStatus.QUEUED], RunStatus.RUNNING, lease=repr(time.time() + 60), bump_epoch=True
    )
    assert ok
    return {"paused": waiting, "queued": queued, "running": running}


def test_a_finished_run_leaves_nothing_behind_and_a_live_one_keeps_everything(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    finished = finished_runs(rt)
    live = live_runs(rt)
    questions = {run_id: interrupts_of(rt, run_id) for run_id in finished.values()}
    assert len(questions[finished["succeeded after a retry"]]) == 2
    jobs = {run_id: existing_jobs(rt, run_id, questions[run_id]) for run_id in finished.values()}
    assert job_ids.first(finished["succeeded"]) in jobs[finished["succeeded"]]
    assert job_ids.retry(finished["failed"], 1) in jobs[finished["failed"]]
    assert all(jobs.values()), jobs
    needles = set(finished.values()) | {iid for iids in questions.values() for iid in iids}
    assert mentions(r, needles), "the runs were not made"
    kept = {run_id: owned(r, run_id) for run_id in live.values()}
    live_needles = set(live.values()) | {rt.store.get(live["paused"]).interrupt}
    live_mentions = mentions(r, live_needles)

    purged = purge_finished(rt, 60, now=time.time() + LATER)

    assert sorted(purged) == sorted(finished.values())
    assert mentions(r, needles) == []
    for run_id, job_list in jobs.items():
        assert [j for j in job_list if Job.exists(j, connection=r)] == [], run_id
    assert {run_id: owned(r, run_id) for run_id in live.values()} == kept
    assert mentions(r, live_needles) == live_mentions
    assert rt.store.waiting_on("U1") == [rt.store.get(live["paused"]).interrupt]
    assert rt.store.counts() == {
        "queued": 1,
        "running": 1,
        "paused": 1,
        "succeeded": 0,
        "failed": 0,
        "cancelled": 0,
        "expired": 0,
    }
    assert purge_finished(rt, 0, now=time.time() + LATER) == []  # nothing left, and a repeat is harmless


def test_a_run_younger_than_the_cutoff_is_kept(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-flaky", {"fail": 0})
    work(rt)
    before = owned(r, run_id)
    assert purge_finished(rt, LATER) == []
    assert purge_finished(rt, LATER, dry_run=True) == []
    assert rt.store.retention.purge(run_id, time.time() - LATER) is None
    assert owned(r, run_id) == before
    assert purge_finished(rt, LATER, now=time.time() + LATER + 1) == [run_id]


def test_a_run_retried_after_it_was_listed_keeps_its_journal(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-flaky", {"fail": "always"})
    work(rt)
    cutoff = time.time()  # after it failed, before the retry ends
    assert rt.store.retention.expired_finished(cutoff) == [run_id]
    admin.retry(rt, run_id, by="U-admin")  # between the listing and the purge
    journal = rt.store.journal(run_id)
    assert rt.store.retention.purge(run_id, cutoff) is None  # queued: refused
    bump(tmp_path, run_id, "fixed")
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert rt.store.retention.purge(run_id, cutoff) is None  # finished again, after the cutoff
    assert rt.store.journal(run_id).items() >= journal.items()


def test_the_sweep_purges_a_bounded_batch_and_zero_keeps_everything(r: Redis, tmp_path: Path) -> None:
    keep_all = make_runtime(r, tmp_path, retention=0)
    ids = [start(keep_all, "t-flaky", {"fail": 0}) for _ in range(3)]
    work(keep_all)
    everything = {k: r.dump(k) for k in r.scan_iter("parley:*")}
    assert sweep(keep_all, now=time.time() + 10 * 365 * 86400).purged == []
    assert {k: r.dump(k) for k in r.scan_iter("parley:*")} == everything

    rt = make_runtime(r, tmp_path, retention=60)
    assert sweep(rt).purged == []  # younger than a minute
    assert purge_finished(rt, 60, now=time.time() + LATER, limit=2) == ids[:2]  # oldest first
    assert sweep(rt, now=time.time() + LATER).purged == ids[2:]
    assert [k for k in r.scan_iter("parley:*")] == []


def test_purging_a_run_that_is_gone_clears_its_stray_index_entries(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    r.zadd(keys.status_index(RunStatus.SUCCEEDED), {"r-gone": 1.0})
    r.zadd(keys.all_runs_index(), {"r-gone": 1.0})
    assert rt.store.retention.expired_finished(2.0) == ["r-gone"]
    assert rt.store.retention.purge("r-gone", 2.0) is None
    assert [k for k in r.scan_iter("*")] == []


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30d", 30 * 86400.0), ("12h", 43200.0), ("15m", 900.0), ("90s", 90.0), ("3600", 3600.0), ("0", 0.0)],
)
def test_durations_are_read_in_days_hours_minutes_or_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5", "10w", "1d2h", "h"])
def test_a_malformed_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="must be a duration such as 30d, 12h, 15m, 90s, or a number of seconds"):
        parse_duration(text)


def test_parley_retention_is_read_at_start_and_a_bad_one_stops_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PARLEY_RETENTION", raising=False)
    assert runtime_settings(load()).retention == 30 * 86400
    monkeypatch.setenv("PARLEY_RETENTION", "12h")
    assert runtime_settings(load()).retention == 43200
    monkeypatch.setenv("PARLEY_RETENTION", "0")
    assert runtime_settings(load()).retention == 0
    monkeypatch.setenv("PARLEY_RETENTION", "a month")
    with pytest.raises(ConfigError, match=r"^PARLEY_RETENTION: .*must be a duration"):
        load()
    assert cli.main(["runs", "list"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("parley: PARLEY_RETENTION: ") and err.count("\n") == 1


def cancelled_runs(rt: Runtime, count: int, *, threads: bool = True) -> list[str]:
    """`count` runs cancelled before any job: finished, with little to delete; in threads if `threads`."""
    ids = []
    for n in range(count):
        conversation = {"host": "test", "team": "T1"}
        run_id = rt.store.create("t-flaky", "{}", "U1", conversation).id
        if threads:
            rt.store.set_thread(run_id, {**conversation, "channel": "C1", "thread_ts": f"1700000000.{n:06d}"})
        rt.store.transition(run_id, [RunStatus.QUEUED], RunStatus.CANCELLED)
        ids.append(run_id)
    return ids


def test_a_batch_of_runs_is_purged_in_two_round_trips(r: Redis, noted: Any, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    ids = cancelled_runs(rt, 10)
    noted.clear()
    purged = Retention(noted).purge_many(ids, time.time() + LATER)
    assert [p.run_id for p in purged] == ids
    assert len(noted.trips) == 2  # the conversations read together, then every run's delete together
    assert mentions(r, set(ids)) == []


class StartsAThread(NotingRedis):
    """Notes commands, and records a thread for `run_id` just before its second round trip."""

    run_id = ""
    mover: RunStore | None = None

    def _note_trip(self, commands: list[list[str]], atomic: bool = False) -> None:
        super()._note_trip(commands, atomic)
        if len(self.trips) == 2 and self.mover is not None:
            self.mover.set_thread(self.run_id, {"host": "test", "team": "T1", "channel": "C2", "thread_ts": "2.0"})


def test_a_thread_recorded_after_the_batch_read_is_read_again_and_purged(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    ids = cancelled_runs(rt, 3, threads=False)
    client = StartsAThread(connection_pool=r.connection_pool)
    client.run_id, client.mover = ids[1], RunStore(r)
    purged = Retention(client).purge_many(ids, time.time() + LATER)
    assert sorted(p.run_id for p in purged) == sorted(ids)
    assert len(client.trips) > 2  # the script refused the run's stale conversation: read it again
    assert rt.store.thread_run("C2", "2.0") is None  # the thread's key went with the run
    assert mentions(r, set(ids)) == []


def test_a_run_that_asked_ten_thousand_questions_is_purged_with_its_batch(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path, retention=60)
    ids = [start(rt, "t-flaky", {"fail": 0}) for _ in range(3)]
    work(rt)
    many = [f"q{n:05d}" for n in range(10_000)]  # what a run answered by a synchronous host could ask
    r.hset(keys.journal(ids[1]), "ask:many", json.dumps(many))
    swept = sweep(rt, now=time.time() + LATER)  # Lua's unpack refused past about 8,000: the sweep raised
    assert swept.purged == ids
    assert [k for k in r.scan_iter("parley:*")] == []
