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
class ApproveOnce:
    """One `parley_temporal.approve` whose amount may be edited; returns as `AskOnce` does."""

    @workflow.run
    async def run(self, args: dict[str, Any], channel: str) -> float:
        decision = await parley_temporal.approve("Refund", args, channel=channel, editable=["amount"])
        if not decision.edited:
            raise RuntimeError(f"the bench edits the amount, but the decision says otherwise: {decision}")
        return workflow.now().timestamp()


@workflow.defn
class EachOnce:
    """One `parley_temporal.ask_each` of two people, both needed; returns as `AskOnce` does."""

    @workflow.run
    async def run(self, request: dict[str, Any], people: list[str], channel: str) -> float:
        outcome = await parley_temporal.ask_each(request, people, quorum=len(people), channel=channel)
        if len(outcome.answers_by or {}) != len(people):
            raise RuntimeError(f"the bench answers for everyone, but the outcome says otherwise: {outcome}")
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
