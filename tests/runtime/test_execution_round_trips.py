"""A resumed execution's Redis round trips: the claim brings the question the run was parked on,
the lock of that question writes no intent and leaves its "done" to the next write, and the
transition that ends the run records the final post's "done" with it."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from noting_redis import NotingRedis
from redis import Redis
from redis.commands.core import Script
from runtime_helpers import parked, paused, runtime_and_host, work

from workers.exceptions import RunNotFound
from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.store import keys, scripts
from workers.store.records import InterruptState, RunStatus
from workers.store.runs import RunStore

pytestmark = pytest.mark.integration


@pytest.fixture
def noted(r: Redis) -> NotingRedis:
    """The noting client, with the store's scripts already in the server's script cache: on a
    server that has not run one yet (a fresh one, or after `SCRIPT FLUSH`), redis-py answers
    `NOSCRIPT` by loading it and sending the same `EVALSHA` again, which the counts below would
    take for a second write."""
    for script in vars(RunStore(r)).values():
        if isinstance(script, Script):
            r.script_load(script.script)
    return NotingRedis(connection_pool=r.connection_pool)


def _sha(script: str) -> str:
    return hashlib.sha1(script.encode()).hexdigest()


def test_a_claim_reads_the_question_the_run_was_parked_on(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask")
    accept(rt, iid, "U1", [Answer(id="colour", choice="green")])

    claim = rt.store.claim(run_id, time.time() + 30)

    assert claim.record is not None and claim.record.interrupt == iid
    assert claim.interrupt == rt.store.interrupt(iid)
    assert claim.interrupt is not None and claim.interrupt.state is InterruptState.ANSWERED


def test_a_claim_of_a_run_that_never_asked_has_no_question(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1"})

    claim = rt.store.claim(run.id, time.time() + 30)

    assert claim.record is not None and claim.interrupt is None


def test_a_resume_reads_no_question_after_its_claim_and_ends_with_the_final_done(
    noted: NotingRedis, tmp_path: Path
) -> None:
    rt, host = runtime_and_host(noted, tmp_path)
    run_id, iid = parked(rt, "t-ask")
    accept(rt, iid, "U1", [Answer(id="colour", choice="green")])
    noted.clear()

    work(rt)

    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert host.closed == [(run_id, "answered")] and host.finals == [(run_id, "colour green")]
    reads = [c for c in noted.sent if c[0] == "HGETALL" and c[1] == keys.interrupt(iid)]
    assert reads == [], "the question was read again after the claim"
    journal_sha = _sha(scripts.JOURNAL)
    final_writes = [c[7] for c in noted.sent if c[:2] == ["EVALSHA", journal_sha] and c[7] == "fx:final"]
    assert len(final_writes) == 1, "the final post's intent only: its done goes with the ending transition"
    assert rt.store.journal(run_id)["fx:final"] == "done"


def test_the_conversation_of_a_run_that_is_gone_is_not_found(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1", "channel": "C1"})
    assert rt.store.conversation(run.id) == {"host": "test", "team": "T1", "channel": "C1"}
    with pytest.raises(RunNotFound):
        rt.store.conversation("r-gone")


def _journal_writes(noted: NotingRedis) -> list[list[str]]:
    """The JOURNAL script calls sent: EVALSHA, sha, 3, three keys, then its ARGV."""
    sha = _sha(scripts.JOURNAL)
    return [c for c in noted.sent if c[:2] == ["EVALSHA", sha]]


def test_the_lock_writes_no_intent_and_its_done_goes_with_the_final_posts_intent(
    noted: NotingRedis, tmp_path: Path
) -> None:
    rt, host = runtime_and_host(noted, tmp_path)
    run_id, iid = parked(rt, "t-ask")
    accept(rt, iid, "U1", [Answer(id="colour", choice="green")])
    noted.clear()

    work(rt)

    assert host.closed == [(run_id, "answered")] and host.finals == [(run_id, "colour green")]
    writes = _journal_writes(noted)
    lock = f"fx:lock:{iid}"
    # ARGV starts after the 3 keys: epoch, field, value, only_if_absent, history, step prefix, then the pairs.
    assert [(w[7], w[8]) for w in writes] == [("fx:final", '"intent"')], "the lock writes no intent"
    assert writes[0][12:] == [lock, '"done"'], "the final post's intent carries the lock's done"
    journal = rt.store.journal(run_id)
    assert journal[lock] == "done" and journal["fx:final"] == "done"


def test_a_resume_that_asks_again_records_the_locks_done_before_it_opens_the_question(
    noted: NotingRedis, tmp_path: Path
) -> None:
    rt, host = runtime_and_host(noted, tmp_path)
    run_id, first = parked(rt, "t-reask")
    accept(rt, first, "U1", [Answer(id="colour", choice="red")])  # not green: asked again

    work(rt)

    again = rt.store.get(run_id).interrupt
    assert rt.store.get(run_id).status is RunStatus.PAUSED and again and again != first
    assert rt.store.journal(run_id)[f"fx:lock:{first}"] == "done"
    noted.clear()
    accept(rt, again, "U1", [Answer(id="colour", choice="green")])
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert host.closed == [(run_id, "answered"), (run_id, "answered")], "each question locked once"
    writes = _journal_writes(noted)
    assert [w[7] for w in writes] == ["fx:final"] and writes[0][12:] == [f"fx:lock:{again}", '"done"']


def _lua_reads_of(r: Redis, key: str, act: Callable[[], object]) -> list[str]:
    """The commands the server ran inside scripts on `key` while `act` ran (Redis's MONITOR)."""
    seen: list[str] = []
    db = r.connection_pool.connection_kwargs.get("db", 0)
    with r.monitor() as m:
        act()
        r.set(f"{key}:monitor-end", 1)  # the last line to wait for
        for line in m.listen():
            cmd = str(line["command"])
            if cmd.startswith("SET ") and f"{key}:monitor-end" in cmd:
                break
            if line["client_type"] == "lua" and int(line["db"]) == db and cmd.split(" ")[1:2] == [key]:
                seen.append(cmd.split(" ")[0])
    return seen


def test_a_claim_reads_the_run_once_and_returns_it_as_it_left_it(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask")
    accept(rt, iid, "U1", [Answer(id="colour", choice="green")])
    claims = []

    ran = _lua_reads_of(r, keys.run(run_id), lambda: claims.append(rt.store.claim(run_id, time.time() + 30)))

    assert ran == ["HGETALL", "HSET"]  # the run read whole once, then the move to running
    claimed, stored = claims[0].record, rt.store.get(run_id)
    assert claimed == stored and claimed.status is RunStatus.RUNNING and claimed.epoch == claims[0].epoch


def test_a_first_claim_reads_no_journal_and_a_later_one_reads_it(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1"})
    journal = keys.journal(run.id)

    first = _lua_reads_of(r, journal, lambda: rt.store.claim(run.id, time.time() + 30))
    rt.store.record(run.id, 1, "step:one", "done")
    rt.store.transition(run.id, [RunStatus.RUNNING], RunStatus.QUEUED, epoch=1, lease="clear")
    claims = []
    later = _lua_reads_of(r, journal, lambda: claims.append(rt.store.claim(run.id, time.time() + 30)))

    assert first == [] and later == ["HGETALL"]
    assert claims[0].journal == {"step:one": "done"}


def test_a_resume_reads_every_earlier_question_in_one_round_trip(noted: NotingRedis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(noted, tmp_path)
    run_id, iid = parked(rt, "t-many", {"n": 6})
    asked = [iid]
    for n in range(5):
        accept(rt, asked[-1], "U1", [Answer(id="colour", choice="red" if n % 2 else "green")])
        work(rt)
        asked.append(paused(rt, run_id))
    accept(rt, asked[-1], "U1", [Answer(id="colour", choice="red")])
    noted.clear()

    work(rt)

    assert rt.store.get(run_id).result == "green red green red green red"
    question_keys = {keys.interrupt(q) for q in asked}
    reads = [
        [c[1] for c in trip] for trip in noted.trips if any(c[0] == "HGETALL" and c[1] in question_keys for c in trip)
    ]
    assert len(reads) == 1, f"the earlier questions took {len(reads)} round trips"
    assert sorted(reads[0]) == sorted(question_keys - {keys.interrupt(asked[-1])}), "the parked one came with the claim"
    assert len(host.closed) == 6
