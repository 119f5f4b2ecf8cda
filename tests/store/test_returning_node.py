"""A node that comes back without its data is never promoted, even by a failover right after.

A real master, one replica and three Sentinels on loopback. The master is killed, the Sentinels
promote the replica, and the dead node comes back empty, as docs/redis-ha.md says to bring it
back: a replica of the new master, with `replica-priority 0`. The new master then stops
answering (SIGSTOP) at once, before the returning node has synced: the Sentinels agree it is
down and try to fail over. They must find no replica to promote, and once the new master
answers again it still holds everything, and the returning node syncs from it.

Brought back as a plain master with `replica-priority 0` instead (the advice this replaces), the
node reports no priority while it is a master; the Sentinels promoted it and the new master
became its replica, empty.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from redis_servers import SERVICE, Topology, have_redis_server, stopped

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server (.ci/run installs it)"),
]

# A Sentinel held up for over 2 s on a loaded host enters TILT mode and acts on nothing for
# 30 s; the waits leave room for one such pause.
TRIED = 90.0


def sentinel_events(topology: Topology, event: str) -> int:
    """How many times the Sentinels' logs name `event` (each Sentinel logs what it saw)."""
    total = 0
    for sentinel in topology.sentinel_servers:
        log = sentinel.workdir / f"{sentinel.name}.log"
        if log.exists():
            total += sum(1 for line in log.read_text(errors="replace").splitlines() if f" {event} " in line)
    return total


def seen_up(topology: Topology, port: int) -> bool:
    """Whether every Sentinel lists the node on `port` as a replica it reaches and has read lately."""
    for sentinel in topology.sentinel_servers:
        client = sentinel.client()
        try:
            listed = client.execute_command("SENTINEL", "REPLICAS", SERVICE)
        finally:
            client.close()
        entries = [{flat[i]: flat[i + 1] for i in range(0, len(flat), 2)} for flat in listed]
        mine = [e for e in entries if int(e[b"port"]) == port]
        if not mine or mine[0][b"flags"] != b"slave" or int(mine[0][b"info-refresh"]) > 2000:
            return False
    return True


def wait_for(what: str, ready: Callable[[], bool], topology: Topology, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}\n{topology.logs()}")
        time.sleep(0.1)


def test_an_empty_returning_node_is_never_promoted_by_a_second_failover(topology: Topology) -> None:
    assert topology.master is not None
    old_master, replica = topology.master, topology.replica_servers[0]
    writer = old_master.client()
    for n in range(100):
        writer.set(f"test:kept:{n}", n)
    assert writer.wait(1, 10_000) == 1  # the replica holds every key before the master dies
    writer.close()

    old_master.kill()
    topology.wait_sentinels_agree(replica.port, timeout=60)
    switched = sentinel_events(topology, "+switch-master")
    fresh = topology.restart_as_empty(old_master)
    wait_for("the Sentinels never saw the node back", lambda: seen_up(topology, fresh.port), topology, TRIED)

    # The new master stops answering before the returning node has synced. The Sentinels agree
    # it is down and try to fail over; with no replica they may promote, they give up.
    with stopped(replica):
        wait_for(
            "the Sentinels never tried to fail the new master over",
            lambda: (
                sentinel_events(topology, "-failover-abort-no-good-slave") > 0
                or sentinel_events(topology, "+switch-master") > switched
            ),
            topology,
            TRIED,
        )
    assert sentinel_events(topology, "+switch-master") == switched, (
        f"a second failover promoted the empty node\n{topology.logs()}"
    )

    # The new master is back and still the master; it kept every key, and the node syncs from it.
    topology.wait_sentinels_agree(replica.port, timeout=60)
    topology.wait_replicas(replica, 1, timeout=TRIED)
    kept = replica.client()
    again = fresh.client()
    try:
        assert kept.execute_command("ROLE")[0] == b"master"
        assert [int(v) for v in kept.mget([f"test:kept:{n}" for n in range(100)])] == list(range(100))
        assert again.execute_command("ROLE")[0] == b"slave"
        assert again.dbsize() == 100
    finally:
        kept.close()
        again.close()
