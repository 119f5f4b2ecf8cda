"""The running `SlackStack`s of the system tests: one factory instead of a fixture per module.

A module names the stack it needs with a mark, `pytest.mark.stack(workers=1, extra_env={...})`,
and its tests take the `stack` fixture. A module whose stack depends on other fixtures (a
receiver's port, a stand-in's URL) asks the `stacks` factory for one in its own fixture. The
factory keeps the stack it started for given settings and hands it to every test that asks
for the same settings, until the tests of that module are done.

Modules do not share a stack. Tried, that broke tests that read the whole call log or compare
a snapshot of all of Redis: the runs a module leaves behind keep writing, and the next module
reads them. Each module's stack starts on a database it flushes and is stopped as soon as the
module's last test is done, before the module's other fixtures go, so a stack never outlives
what it depends on. One stack is up at a time in a process, as all use the test database.
"""

from __future__ import annotations

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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Stop the stack after a module's last test, before the module's fixtures go."""
    factory = item.config.stash.get(_live, None)
    last_of_module = nextitem is None or getattr(nextitem, "module", None) is not getattr(item, "module", None)
    if factory is not None and factory.stack is not None and last_of_module:
        factory.stop()
    return (yield)
