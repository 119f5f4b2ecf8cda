"""Shared fixtures: a real Redis (REDIS_URL, or the embedded server), flushed per test.

Every test belongs to one group, marked on its module (`pytestmark`): `unit` (in-process only),
`integration` (real Redis, in-process bolt/RQ, loopback servers), `system` (real `parley`
processes or a browser) or `faults` (the fault-injection suite). Collection fails for a test
in no group, and for a `unit` test that asks for Redis.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


GROUPS = ("unit", "integration", "system", "faults")
REDIS_FIXTURES = {"r", "redis_url"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse to run tests that are in no group, or `unit` tests that need Redis."""
    problems: dict[str, set[str]] = {}
    for item in items:
        groups = [g for g in GROUPS if item.get_closest_marker(g) is not None]
        if not groups:
            problems.setdefault(item.nodeid.split("::")[0], set()).add("is in no group")
        elif groups == ["unit"] and REDIS_FIXTURES & set(getattr(item, "fixturenames", ())):
            problems.setdefault(item.nodeid.split("::")[0], set()).add("is marked unit but uses Redis")
    if problems:
        listed = "\n".join(f"  {name}: a test {', '.join(sorted(why))}" for name, why in sorted(problems.items()))
        raise pytest.UsageError(
            "every test module needs the group its tests belong to: `pytestmark = pytest.mark.unit` (in-process "
            "only: no Redis, no processes, no network), `integration` (real Redis, in-process bolt/RQ, loopback "
            f"servers) or `system` (real parley processes or a browser); see the markers in pyproject.toml\n{listed}"
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seed", type=int, default=None, help="seed of the fault-injection suite")
    parser.addoption("--rounds", type=int, default=None, help="rounds of the fault-injection suite")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Redis database the tests may flush: never database 0 of a shared server."""
    url = os.environ.get("REDIS_URL")
    worker = _xdist_worker()
    if url:
        client = redis.Redis.from_url(url)
        db = int(client.connection_pool.connection_kwargs.get("db", 0))
        client.close()
        if db == 0:
            pytest.exit("REDIS_URL points at database 0; the tests flush their database, so give them their own")
        yield _with_db(url, db + worker) if worker else url
        return
    from workers.store import embedded

    data_dir = tmp_path_factory.mktemp("embedded-redis")
    sock = embedded.ensure_server(data_dir)
    holder = embedded.Holder(sock)
    yield f"unix://{sock}?db={worker}"
    holder.release()


def _xdist_worker() -> int:
    """This process's number under `pytest -n N` (0 without it): each worker flushes a database of its own."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") else 0


def _with_db(url: str, db: int) -> str:
    """`url` naming database `db` instead of its own (the path, or `?db=` for a socket)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = "&".join([q for q in parts.query.split("&") if q and not q.startswith("db=")] + [f"db={db}"])
        return urlunsplit(parts._replace(query=query))
    return urlunsplit(parts._replace(path=f"/{db}"))


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()
