"""`PARLEY_REDIS_MIN_REPLICAS`: an answer is acked only once a replica has it; unconfirmed, it is kept
and the same person's same answers, submitted again, are the same acceptance.

A private master and one replica on loopback; the replica is frozen (SIGSTOP) to stand for
one that does not confirm in time.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from redis_servers import Topology, have_redis_server
from runtime_helpers import make_runtime, parked, work

from bot.slack.refusals import refusal_text
from workers.interaction import Answer
from workers.runtime.acceptance import AcceptRefused, accept, try_accept
from workers.store import keys
from workers.store.records import RefusalReason, RunStatus

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server (.ci/run installs it)"),
]

RED = [Answer(id="colour", choice="red")]
GREEN = [Answer(id="colour", choice="green")]
ASSIGNEES = {"assignees": ["U1", "U2"]}


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Topology]:
    topology = Topology(tmp_path / "redis", replicas=1, sentinels=0).start()
    try:
        yield topology
    finally:
        topology.stop()


@pytest.fixture
def master(pair: Topology) -> Iterator[redis.Redis]:
    assert pair.master is not None
    client = pair.master.client()
    yield client
    client.close()


@contextmanager
def frozen(pair: Topology) -> Iterator[None]:
    """The replica stopped (SIGSTOP): connected, but confirming nothing until it continues."""
    proc = pair.replica_servers[0].proc
    assert proc is not None
    proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGCONT)
        # Back means caught up: on a loaded machine the replica may need longer than the
        # acceptance's own short WAIT to work through what it missed while stopped.
        assert pair.master is not None
        probe = pair.master.client()
        probe.set("test:caught-up", 1)  # WAIT counts replicas holding this connection's writes
        probe.delete("test:caught-up")
        probe.wait(1, 10_000)


def state_on(client: redis.Redis, iid: str) -> tuple[str, str]:
    state, answers = client.hmget(keys.interrupt(iid), ["state", "answers"])
    return (state or b"").decode(), (answers or b"").decode()


def test_an_acked_answer_is_already_on_the_replica(pair: Topology, master: redis.Redis, tmp_path: Path) -> None:
    rt = make_runtime(master, tmp_path, min_replicas=1)
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
        assert refused.value.reason is RefusalReason.ANSWERED and refused.value.detail["by"] == "U1"
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "colour red")
    assert [e.event for e in rt.store.history(run_id)].count("answered") == 1
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
    rt = make_runtime(master, tmp_path, min_replicas=1)
    _, iid = parked(rt, "t-ask", ASSIGNEES)
    master.script_flush()
    accept(rt, iid, "U1", RED, token="U1:click-1")
    assert state_on(pair.replica_servers[0].client(), iid)[0] == "answered"
