"""One running `SlackStack` per settings, shared by the test modules that ask for the same ones.

A module names the stack it needs with a mark, `pytest.mark.stack(workers=1, extra_env={...})`,
and its tests take the `stack` fixture. A module whose stack depends on other fixtures (a
receiver's port, a stand-in's URL) asks the `stacks` factory for one in its own fixture.
Starting a stack costs seconds (a `parley serve` and its workers), so modules marked alike
share one: under `--dist loadgroup` they form one `xdist_group` and run one after another on
one worker, and the stack stays up from the first of them to the last.

One stack is up at a time in a process: every stack uses the test database and flushes it as
it starts. The stack is stopped as soon as the next test belongs to a module that does not
want the same one, before that module's fixtures are torn down, so it never outlives what it
depends on or sees another module's flushes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from slack_stack import SlackStack

MARK = "stack"
_live = pytest.StashKey["Stacks"]()


DEFAULTS: dict[str, Any] = {"workers": 2, "socket_mode": False, "extra_env": {}}  # SlackStack's own


def _key(redis_url: str, settings: dict[str, Any]) -> str:
    return json.dumps({**DEFAULTS, "redis_url": redis_url, **settings}, sort_keys=True)


class Stacks:
    """The factory: the running stack for given settings, started on first use."""

    def __init__(self, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> None:
        self.redis_url = redis_url
        self.tmp_path_factory = tmp_path_factory
        self.key: str | None = None
        self.stack: SlackStack | None = None

    def __call__(self, *, redis_url: str | None = None, **settings: Any) -> SlackStack:
        """The stack for `settings` (SlackStack's own: workers, socket_mode, extra_env) on `redis_url`."""
        url = redis_url or self.redis_url
        key = _key(url, settings)
        if self.stack is not None and self.key == key:
            return self.stack
        self.stop()
        data_dir = self.tmp_path_factory.mktemp("stack")
        self.stack = SlackStack(url, data_dir, **{**settings, "extra_env": dict(settings.get("extra_env", {}))})
        self.stack.start()
        self.key = key
        return self.stack

    def wanted_by(self, item: pytest.Item) -> str | None:
        """The key of the stack `item`'s module marks itself as wanting (None without the mark)."""
        mark = item.get_closest_marker(MARK)
        return None if mark is None else _key(self.redis_url, dict(mark.kwargs))

    def stop(self) -> None:
        if self.stack is not None:
            self.stack.stop()
        self.stack, self.key = None, None


@pytest.fixture(scope="session")
def stacks(redis_url: str, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[Stacks]:
    factory = Stacks(redis_url, tmp_path_factory)
    pytestconfig.stash[_live] = factory
    try:
        yield factory
    finally:
        factory.stop()
        del pytestconfig.stash[_live]


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest, stacks: Stacks) -> SlackStack:
    """The running stack the module's `pytest.mark.stack(...)` asks for."""
    mark = request.node.get_closest_marker(MARK)
    if mark is None:
        raise pytest.UsageError(f"{request.node.nodeid} takes `stack` but has no pytest.mark.stack(...) to say which")
    return stacks(**mark.kwargs)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "stack(**settings): the SlackStack the module's tests share (tests/stacks.py)")


def _group(item: pytest.Item) -> str | None:
    """The xdist_group of `item`: its stack's settings, or its module unless it is a unit test."""
    mark = item.get_closest_marker(MARK)
    if mark is not None:
        digest = hashlib.sha1(json.dumps({**DEFAULTS, **mark.kwargs}, sort_keys=True).encode()).hexdigest()[:10]
        return f"stack-{digest}"
    if item.get_closest_marker("unit") is not None:
        module = vars(getattr(item, "module", None) or object)
        if any(getattr(v, "__module__", "") == "source_trees" for v in module.values()):
            return "source-trees"  # one worker parses Parley's modules once for all the code-rule tests
        return None  # in-process and fixture-free across tests: spread one by one
    return item.nodeid.split("::")[0]  # a module's fixtures (its servers, its stack) start once


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which names each test's group in its id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep what shares a stack, or a module's fixtures, on one xdist worker (`--dist loadgroup`)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and (group := _group(item)) is not None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Stop the stack before this module's fixtures go, unless the next test's module wants the same one."""
    factory = item.config.stash.get(_live, None)
    if factory is not None and factory.stack is not None:
        same_module = nextitem is not None and getattr(nextitem, "module", None) is getattr(item, "module", None)
        if not same_module and (nextitem is None or factory.wanted_by(nextitem) != factory.key):
            factory.stop()
    return (yield)
