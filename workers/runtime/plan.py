"""`run.plan([...])` and the steps a host may show as a live plan of the run.

An agent may name its steps ahead: `run.plan(["Fetch the invoice", "Pay it"])`. Each step
(`run.step`) or question the run then reaches takes the next named one, in order; without
names, a step shows its key. A host that draws plans (`ShowsPlan`, Slack's `plan` block)
is told of the names and of each step as it starts, completes or raises. Others are not.

Kept apart from `Run` as a mixin so the run's own module stays about replay. What a host
shows is never part of the run: a host that fails to show it is logged, and the run goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from workers.logs import Log
from workers.runtime.host import Host, ShowsPlan
from workers.store.records import RunRecord

T = TypeVar("T")
PLAN_MAX = 50
"""How many steps an agent may name ahead: as many as Slack shows blocks in one message."""


class PlanSteps:
    """`plan` for agents, and the step notices `Run.step` gives the host."""

    _host: Host
    _record: RunRecord
    log: Log

    def plan(self, steps: list[str]) -> None:
        """Name the run's steps ahead, in the order the run reaches them (steps and questions alike)."""
        names = [str(s).strip() for s in steps if str(s).strip()]
        if len(names) > PLAN_MAX:
            raise ValueError(f"a plan names at most {PLAN_MAX} steps, not {len(names)}")
        self._show_plan(lambda host: host.plan_named(self._record, names))

    def _planned(self, key: str, fn: Callable[[], T]) -> T:
        """Run step `key`'s `fn`, telling a plan-drawing host it started, completed or raised."""
        self._show_plan(lambda host: host.plan_step(self._record, key, "in_progress"))
        try:
            result = fn()
        except BaseException:
            self._show_plan(lambda host: host.plan_step(self._record, key, "error"))
            raise
        self._show_plan(lambda host: host.plan_step(self._record, key, "complete"))
        return result

    def _show_plan(self, tell: Callable[[ShowsPlan], None]) -> None:
        if not isinstance(self._host, ShowsPlan):
            return
        try:
            tell(self._host)
        except Exception as exc:  # what a host shows never fails the run
            self.log.warning("the plan was not shown", error=f"{type(exc).__name__}: {exc}")
