"""Shared fixtures: a real Redis (REDIS_URL, or the embedded server), flushed per test."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seed", type=int, default=None, help="seed of the fault-injection suite")
    parser.addoption("--rounds", type=int, default=None, help="rounds of the fault-injection suite")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Redis database the tests may flush: never database 0 of a shared server."""
    url = os.environ.get("REDIS_URL")
    if url:
        client = redis.Redis.from_url(url)
        db = client.connection_pool.connection_kwargs.get("db", 0)
        if int(db) == 0:
            pytest.exit("REDIS_URL points at database 0; the tests flush their database, so give them their own")
        yield url
        return
    from workers.store import embedded

    data_dir = tmp_path_factory.mktemp("embedded-redis")
    sock = embedded.ensure_server(data_dir)
    holder = embedded.Holder(sock)
    yield f"unix://{sock}?db=0"
    holder.release()


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()
