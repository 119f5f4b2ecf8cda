"""The `Interactor` protocol: how a host puts a request in front of people."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from workers.interaction.context import Context, ContextChange
from workers.interaction.models import Outcome, Request


@runtime_checkable
class RunView(Protocol):
    """What a host may know about the run that asks: identity and where it talks."""

    @property
    def run_id(self) -> str: ...

    @property
    def started_by(self) -> str: ...

    @property
    def conversation(self) -> dict[str, Any]: ...

    @property
    def interrupt_id(self) -> str | None: ...

    @property
    def question_context(self) -> Context | None:
        """The facts the person decides on with this question, to be shown with it (None: none given)."""
        ...

    @property
    def context_changes(self) -> list[ContextChange]:
        """What changed, field by field, since an earlier answer to this question was given on other facts."""
        ...


@runtime_checkable
class Interactor(Protocol):
    """Puts a request to people.

    A pause/resume host (Slack) posts the question and returns `Outcome(paused=True)`;
    the answers arrive out of band. A synchronous host (the terminal) returns them.
    """

    def solicit(self, request: Request, run: RunView) -> Outcome: ...
