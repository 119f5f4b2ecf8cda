"""Shared fixtures: a real Redis (REDIS_URL, or the embedded server), flushed per test.

Every test belongs to one group, marked on its module (`pytestmark`): `unit` (in-process only),
`integration` (real Redis, in-process bolt/RQ, loopback servers), `system` (real `parley`
processes or a browser) or `faults` (the fault-injection suite). Collection fails for a test
in no group, and for a `unit` test that asks for Redis.

Under `pytest -n N` (pytest-xdist, on by default in pyproject.toml) worker `gw<i>` flushes
database 20+i, never 0 and never the database REDIS_URL names. Where REDIS_URL's server has
too few databases (Redis's default is 16), the session starts a private `redis-server` with
enough of them and every worker uses that one (tests/parallel.py).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# The helpers (tests/*.py) and every surface folder's modules import by bare name from any folder:
# a module may import another's helpers (`from test_slack_approve import click`) whatever runs first.
SURFACES = [d for d in sorted(TESTS.iterdir()) if d.is_dir() and any(d.glob("test_*.py")) and d.name != "faults"]
sys.path[:0] = [str(TESTS), *(str(d) for d in SURFACES)]

pytest_plugins = ["parallel", "stacks"]


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
        elif "unit" in groups and not _mentions_unit(item.path):
            why = f"is marked unit without `{UNIT_MARK}` in its text (`-m unit` reads only such modules)"
            problems.setdefault(item.nodeid.split("::")[0], set()).add(why)
    if problems:
        listed = "\n".join(f"  {name}: a test {', '.join(sorted(why))}" for name, why in sorted(problems.items()))
        raise pytest.UsageError(
            "every test module needs the group its tests belong to: `pytestmark = pytest.mark.unit` (in-process "
            "only: no Redis, no processes, no network), `integration` (real Redis, in-process bolt/RQ, loopback "
            f"servers) or `system` (real parley processes or a browser); see the markers in pyproject.toml\n{listed}"
        )


UNIT_MARK = "mark.unit"  # how a module's text says it holds unit tests: `pytestmark = pytest.mark.unit`


@functools.cache
def _mentions_unit(path: Path) -> bool:
    try:
        return UNIT_MARK in path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m unit`, leave unread the modules with no unit test: importing them is most of the wait.

    Their frameworks (the agent SDKs, Temporal, LangGraph) take seconds to import, for tests the
    mark deselects anyway. `pytest_collection_modifyitems` keeps the rule honest in every other run.
    """
    if (config.option.markexpr or "").strip() != "unit":
        return None
    if collection_path.is_dir():
        return None if any(_mentions_unit(p) for p in collection_path.rglob("test_*.py")) else True
    if collection_path.name.startswith("test_") and collection_path.suffix == ".py":
        return None if _mentions_unit(collection_path) else True
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seed", type=int, default=None, help="seed of the fault-injection suite")
    parser.addoption("--rounds", type=int, default=None, help="rounds of the fault-injection suite")


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def noted(r: redis.Redis) -> redis.Redis:
    """A client on `r`'s connections that notes each command it sends (`noting_redis.NotingRedis`)."""
    from noting_redis import NotingRedis  # a helper module: importable once sys.path holds tests/

    return NotingRedis(connection_pool=r.connection_pool)
