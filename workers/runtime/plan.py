"""`run.plan([...])` and the steps a host may show as a live plan of the run.

An agent may name its steps ahead: `run.plan(["Fetch the invoice", "Pay it"])`. Each step
(`run.step`) or question the run then reaches takes the next name, in order. Without names, a
step shows its key. A host that draws plans (`ShowsPlan`, Slack's `plan` block) is told the
names. It is also told of each step as it starts, completes or raises. Other hosts are not.

This is a mixin apart from the execution, so that module stays about replay. What a host shows
is never part of the run. A host that fails to show it is logged, and the run goes on.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import TypeVar

from workers.logs import Log
from workers.runtime.host import Host, ShowsPlan
from workers.store.records import RunRecord

T = TypeVar("T")
PLAN_MAX = 50
"""How many steps an agent may name ahead: as many as Slack shows blocks in one message."""


class PlanSteps:
    """`plan` for agents, and the host's notices of an execution's steps."""

    log: Log

    @property
    @abstractmethod
    def host(self) -> Host:
        """The run's host; the execution has it."""

    @property
    @abstractmethod
    def record(self) -> RunRecord:
        """The run's record; the execution has it."""

    def name_steps(self, steps: list[str]) -> None:
        """Name the run's steps ahead, in the order reached, questions included."""
        names = [str(s).strip() for s in steps if str(s).strip()]
        if len(names) > PLAN_MAX:
            raise ValueError(f"a plan names at most {PLAN_MAX} steps, not {len(names)}")
        self._show_plan(lambda host: host.plan_named(self.record, names))

    def _planned(self, key: str, fn: Callable[[], T]) -> T:
        """Run step `key`'s `fn`, telling a plan-drawing host how it went.

        It is told when the step started, completed or raised.
        """
        self._show_plan(lambda host: host.plan_step(self.record, key, "in_progress"))
        try:
            result = fn()
        except BaseException:
            self._show_plan(lambda host: host.plan_step(self.record, key, "error"))
            raise
        self._show_plan(lambda host: host.plan_step(self.record, key, "complete"))
        return result

    def _show_plan(self, tell: Callable[[ShowsPlan], None]) -> None:
        if not isinstance(self.host, ShowsPlan):
            return
        try:
            tell(self.host)
        except Exception as exc:  # what a host shows never fails the run
            self.log.warning("the plan was not shown", error=f"{type(exc).__name__}: {exc}")
