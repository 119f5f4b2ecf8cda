"""Fixtures the store's Redis high-availability tests share: a master and one replica, no Sentinel."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis_servers import Topology, scratch_dir


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Topology]:
    with scratch_dir(tmp_path / "redis-logs") as workdir:
        topology = Topology(workdir, replicas=1, sentinels=0).start()
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
