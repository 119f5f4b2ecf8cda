"""`PARLEY_REDIS_MIN_REPLICAS`: an answer is acked only once a replica has it; unconfirmed, it is kept
and the same person's same answers, submitted again, are the same acceptance. So for a single
question and for one of several asked at once (`ask_each`).

A private master and one replica on loopback; the replica is frozen (SIGSTOP) to stand for
one that does not confirm in time.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from redis_servers import Topology, frozen, have_redis_server
from runtime_helpers import make_runtime, parked, work

from bot.slack.refusals import refusal_text
from workers.interaction import Answer
from workers.runtime.acceptance import AcceptRefused, accept, try_accept
from workers.runtime.wiring import Runtime
from workers.store import keys
from workers.store.records import InterruptRecord, RefusalReason, RunStatus

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server (.ci/run installs it)"),
]

RED = [Answer(id="colour", choice="red")]
GREEN = [Answer(id="colour", choice="green")]
ASSIGNEES = {"assignees": ["U1", "U2"]}
EACH = {"assignees": ["U1", "U2", "U3"], "quorum": 2}


@contextmanager
def paused_for(pair: Topology, seconds: float) -> Iterator[None]:
    """The replica stopped (SIGSTOP) and continued `seconds` later, whatever the body is doing then."""
    proc = pair.replica_servers[0].proc
    assert proc is not None
    proc.send_signal(signal.SIGSTOP)
    timer = threading.Timer(seconds, proc.send_signal, (signal.SIGCONT,))
    timer.start()
    try:
        yield
    finally:
        timer.join()
        proc.send_signal(signal.SIGCONT)


def state_on(client: redis.Redis, iid: str) -> tuple[str, str]:
    state, answers = client.hmget(keys.interrupt(iid), ["state", "answers"])
    return (state or b"").decode(), (answers or b"").decode()


# An ack waits this long for a replica where the test wants it confirmed: a loaded machine can
# take longer than the production half second to resume a paused replica and send it the write.
PATIENT_MS = 10_000


def test_an_acked_answer_is_already_on_the_replica(pair: Topology, master: redis.Redis, tmp_path: Path) -> None:
    rt = make_runtime(master, tmp_path, min_replicas=1, replica_wait_ms=PATIENT_MS)
    run_id, iid = parked(rt, "t-ask", ASSIGNEES)
    accept(rt, iid, "U1", RED, token="U1:click-1")
    replica = pair.replica_servers[0].client()
    assert state_on(replica, iid)[0] == "answered"  # read at once: WAIT returned only after the replica had it
    work(rt)
    assert rt.store.get(run_id).result == "colour red"


def test_an_unconfirmed_answer_is_kept_and_its_resubmission_accepted_once(
    pair: Topology, master: redis.Redis, tmp_path: Path
) -> None:
    rt = make_runtime(master, tmp_path, min_replicas=1)
    run_id, iid = parked(rt, "t-ask", ASSIGNEES)
    interrupt = rt.store.interrupt(iid)
    assert interrupt is not None
    with frozen(pair):
        outcome = try_accept(rt, interrupt, "U1", RED, team=None, token="U1:click-1")
        assert outcome.reason is RefusalReason.UNCONFIRMED
        assert "Please submit it again" in refusal_text(outcome)
        # Kept on the master, not half-done: the question is answered and the run queued to resume.
        assert state_on(master, iid) == ("answered", json.dumps([a.model_dump(exclude_none=True) for a in RED]))
        assert rt.store.get(run_id).status is RunStatus.QUEUED
        # Submitted again (a new click) while the replica still lags: recognised, still unconfirmed.
        with pytest.raises(AcceptRefused) as again:
            accept(rt, iid, "U1", RED, token="U1:click-2")
        assert again.value.reason is RefusalReason.UNCONFIRMED
    # The replica is back: the same answers from the same person are the acceptance already made.
    accept(rt, iid, "U1", RED, token="U1:click-3")
    # Other answers, or another person, are refused as ever: the question was answered.
    for user, answers in (("U1", GREEN), ("U2", RED)):
        with pytest.raises(AcceptRefused) as refused:
            accept(rt, iid, user, answers, token=f"{user}:click-4")
        assert refused.value.reason is RefusalReason.ANSWERED and refused.value.refusal.by == "U1"
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "colour red")
    assert [e.event for e in rt.store.history(run_id)].count("answered") == 1
    assert (tmp_path / "counters" / f"{run_id}.executions").read_text() == "xx"  # asked, then resumed once


def each_member(rt: Runtime, gid: str, user: str) -> InterruptRecord:
    member = rt.store.groups.member_for(gid, user)
    assert member is not None
    return member


def test_an_acked_group_answer_is_already_on_the_replica(pair: Topology, master: redis.Redis, tmp_path: Path) -> None:
    rt = make_runtime(master, tmp_path, min_replicas=1, replica_wait_ms=PATIENT_MS)
    run_id, gid = parked(rt, "t-each", EACH)
    u1 = each_member(rt, gid, "U1")
    started = time.monotonic()  # before the stop: the 0.2 s are counted from no later than it
    with paused_for(pair, 0.2):  # stopped for less than the WAIT: the ack waits for it, then goes
        accept(rt, u1.id, "U1", RED, token="U1:click-1")
        waited = time.monotonic() - started
    assert waited >= 0.2, waited  # without WAIT the ack would not have waited for the replica
    replica = pair.replica_servers[0].client()
    assert state_on(replica, u1.id)[0] == "answered"  # read at once: WAIT returned only after the replica had it
    accept(rt, each_member(rt, gid, "U2").id, "U2", GREEN, token="U2:click-1")
    work(rt)
    assert rt.store.get(run_id).result == "U1=red U2=green"


def test_an_unconfirmed_group_answer_is_kept_and_its_resubmission_accepted_once(
    pair: Topology, master: redis.Redis, tmp_path: Path
) -> None:
    rt = make_runtime(master, tmp_path, min_replicas=1)
    run_id, gid = parked(rt, "t-each", EACH)
    u1, u2 = each_member(rt, gid, "U1"), each_member(rt, gid, "U2")
    with frozen(pair):
        outcome = try_accept(rt, u1, "U1", RED, team=None, token="U1:click-1")
        assert outcome.reason is RefusalReason.UNCONFIRMED
        assert "Please submit it again" in refusal_text(outcome)
        assert state_on(master, u1.id) == ("answered", json.dumps([a.model_dump(exclude_none=True) for a in RED]))
        with pytest.raises(AcceptRefused) as again:  # submitted again while the replica lags: still unconfirmed
            accept(rt, u1.id, "U1", RED, token="U1:click-2")
        assert again.value.reason is RefusalReason.UNCONFIRMED
        assert rt.store.get(run_id).status is RunStatus.PAUSED  # U1 counted once toward the quorum of 2
        with pytest.raises(AcceptRefused) as last:  # completes the group on the master: the run is queued
            accept(rt, u2.id, "U2", GREEN, token="U2:click-1")
        assert last.value.reason is RefusalReason.UNCONFIRMED
        assert rt.store.get(run_id).status is RunStatus.QUEUED
    # The replica is back: the same answers from the same people are the acceptances already made.
    accept(rt, u1.id, "U1", RED, token="U1:click-3")
    accept(rt, u2.id, "U2", GREEN, token="U2:click-3")
    assert state_on(pair.replica_servers[0].client(), u2.id)[0] == "answered"
    with pytest.raises(AcceptRefused) as refused:  # other answers are refused as ever: the question was answered
        accept(rt, u1.id, "U1", GREEN, token="U1:click-4")
    assert refused.value.reason is RefusalReason.ANSWERED and refused.value.refusal.by == "U1"
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "U1=red U2=green")
    assert [e.event for e in rt.store.history(run_id)].count("answered") == 2  # one per member
    assert (tmp_path / "counters" / f"{run_id}.executions").read_text() == "xx"  # asked, then resumed once


def test_without_the_setting_nothing_waits(pair: Topology, master: redis.Redis, tmp_path: Path) -> None:
    rt = make_runtime(master, tmp_path)
    _, iid = parked(rt, "t-ask", ASSIGNEES)
    with frozen(pair):
        accept(rt, iid, "U1", RED, token="U1:click-1")  # acked with the replica frozen
    assert state_on(master, iid)[0] == "answered"


def test_a_master_without_the_script_loaded_still_accepts_and_waits(
    pair: Topology, master: redis.Redis, tmp_path: Path
) -> None:
    """A promoted replica starts with an empty script cache: the pipelined close loads it and goes on."""
    rt = make_runtime(master, tmp_path, min_replicas=1, replica_wait_ms=PATIENT_MS)
    _, iid = parked(rt, "t-ask", ASSIGNEES)
    master.script_flush()
    accept(rt, iid, "U1", RED, token="U1:click-1")
    assert state_on(pair.replica_servers[0].client(), iid)[0] == "answered"
