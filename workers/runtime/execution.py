"""The execution that `ask_group` and `attempts` work on, typed without importing `run`.

`Run` satisfies it. The names with an underscore are the execution's own state: the
agent never sees them, only the modules that carry out its asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from workers.interaction import Context, ContextChange, PausingRun
from workers.logs import Log
from workers.runtime.host import Host
from workers.runtime.wiring import Runtime
from workers.store.records import InterruptRecord, RunRecord

T = TypeVar("T")


class Execution(PausingRun, Protocol):
    """One execution of one run, as the modules that carry out its asks use it."""

    log: Log
    _rt: Runtime
    _journal: dict[str, Any] | None
    _key_calls: dict[str, int]
    _changed: dict[str, bool]
    _interrupt: InterruptRecord | None
    _opened_earlier: bool
    _asks: int

    @property
    def record(self) -> RunRecord: ...

    @property
    def epoch(self) -> int: ...

    @property
    def host(self) -> Host: ...

    @property
    def interrupt(self) -> InterruptRecord | None: ...

    def durable(self, call: Callable[[], T], what: str, *, carries_pending: bool = False) -> T: ...

    def read(self, call: Callable[[], T], what: str) -> T: ...

    def once(
        self, name: str, effect: Callable[[], Any], *, ends_run: bool = False, repeatable: bool = False
    ) -> None: ...

    def step(self, key: str, fn: Callable[[], T]) -> T: ...

    def read_interrupt(self, iid: str) -> InterruptRecord | None: ...

    def _recorded(self, field: str) -> Any: ...

    def _void_if_changed(
        self, interrupt: InterruptRecord, bound: str, facts: Context | None
    ) -> list[ContextChange] | None: ...
