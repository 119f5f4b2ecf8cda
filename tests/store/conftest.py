"""Fixtures the store's Redis high-availability tests share: a master and one replica, with or without Sentinels."""

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


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[Topology]:
    """A master, one replica and three Sentinels watching them, quick to fail over."""
    with scratch_dir(tmp_path / "redis-logs") as workdir:
        ha = Topology(workdir, replicas=1, sentinels=3, down_after_ms=1000, failover_timeout_ms=3000).start()
        try:
            yield ha
        finally:
            ha.stop()
