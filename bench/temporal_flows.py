"""The workflows measurement 13 runs on Temporal's dev server (importable, as Temporal's sandbox needs)."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workers.integrations import temporal as parley_temporal


@workflow.defn
class AskOnce:
    """One `parley_temporal.ask`; returns when the code after it ran (the workflow task's time)."""

    @workflow.run
    async def run(self, request: dict[str, Any], channel: str) -> float:
        await parley_temporal.ask(request, channel=channel)
        return workflow.now().timestamp()


@workflow.defn
class SignalOnce:
    """Temporal's own: a signal handler sets a flag that `wait_condition` waits on."""

    def __init__(self) -> None:
        self.poked = False

    @workflow.signal
    def poke(self) -> None:
        self.poked = True

    @workflow.run
    async def run(self) -> float:
        await workflow.wait_condition(lambda: self.poked)
        return workflow.now().timestamp()
