"""`Interactor`: the one contract between Parley's runtime and a host (Slack, the terminal, ...).

A host puts questions to people (`solicit`) and tells them how the run goes (`say`, `finished`,
`failed`, a question `closed`, `superseded`, `remind`, `group_progress`, `escalated`,
`reassigned`). It sees
runs and questions only through the port's views (`workers.interaction.views`). A new host is
"implement `Interactor` and pass `tests/test_interactor_contract.py`".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from workers.interaction.context import Context, ContextChange
from workers.interaction.models import Outcome, Request
from workers.interaction.views import GroupInfo, QuestionInfo, QuestionProgress, RunInfo


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


class PausingRun(RunView, Protocol):
    """What a host that pauses may read and record about the run that asks.

    A pause/resume host posts a question once and must find it on replay: it reads where the
    question was posted and records where it posts it, nothing more. When
    `question_may_be_posted`, an earlier execution opened the question and may have died inside
    the post: the host looks for its message before posting it.
    """

    @property
    def record(self) -> RunInfo: ...

    @property
    def question_message(self) -> dict[str, Any]: ...

    @property
    def question_may_be_posted(self) -> bool: ...

    @property
    def interrupt(self) -> QuestionInfo | None:
        """The current question as recorded: who may answer it, the user groups among them."""
        ...

    def record_question_message(self, message: dict[str, Any], *, parked_next: bool = False) -> None:
        """Record where the question was posted. `parked_next`: nothing else happens before the
        run parks, and the park records it in the same step (one write fewer)."""
        ...

    @property
    def question_progress(self) -> QuestionProgress | None:
        """For a question put to each person separately (`ask_each`), how far it is; None otherwise."""
        ...

    @property
    def asked_separately(self) -> Sequence[QuestionInfo]:
        """For `ask_each`, each person's own question behind the shared message; empty otherwise."""
        ...

    def record_assignees(
        self, assignees: list[str], groups: dict[str, list[str]], escalate_to: list[str] | None = None
    ) -> None:
        """Record who may answer the current question, user groups resolved to `groups`' members,
        before it is posted."""
        ...


@runtime_checkable
class Interactor(Protocol):
    """Puts questions to people and reports progress and outcomes in the run's conversation.

    A pause/resume host (Slack) posts the question and returns `Outcome(paused=True)`; the
    answers arrive out of band. A synchronous host (the terminal) returns them. `solicit` may be
    called again for a question it already showed, and `question_closed`, `question_superseded`
    and `group_progress` for what they already showed (a replay after a crash, or a worker that
    lost the run): the second call must show nothing new. The runtime journals the others, so
    each is called once for what it shows (`remind` once per reminder).
    """

    def solicit(self, request: Request, run: PausingRun) -> Outcome: ...

    def say(self, run: RunInfo, text: str) -> None: ...

    def finished(self, run: RunInfo, result: str) -> None: ...

    def failed(self, run: RunInfo, reason: str) -> None: ...

    def question_closed(self, run: RunInfo, question: QuestionInfo) -> None:
        """Show that the question closed (answered, expired, cancelled, no longer needed)."""
        ...

    def question_superseded(self, run: RunInfo, question: QuestionInfo, changes: list[ContextChange]) -> None:
        """Mark an answered question void: the facts it was answered on changed (`changes`); it is asked again."""
        ...

    def remind(self, run: RunInfo, question: QuestionInfo, *, last_call: bool = False) -> None:
        """Remind the people asked; `last_call`: the question expires soon, say when."""
        ...

    def claimed(self, run: RunInfo, question: QuestionInfo, *, by: str, released: bool) -> None:
        """Show that `by` claimed the question (`Request.claim`), or released it (`released`)."""
        ...

    def group_progress(self, run: RunInfo, group: GroupInfo, progress: QuestionProgress) -> None:
        """Show how far an `ask_each` question is on the message its people share (`progress.closed`: locked)."""
        ...

    def escalated(self, run: RunInfo, question: QuestionInfo, added: list[str]) -> None:
        """The question was escalated: `added` may answer it now; tell them and show it."""
        ...

    def reassigned(self, run: RunInfo, question: QuestionInfo, *, by: str, to: str) -> None:
        """`by` handed the question to `to`; tell `to` and show the change."""
        ...

    def people(self, run: RunInfo, ids: list[str]) -> list[str]:
        """The people `ids` name, each user group (`S…`) replaced by its members, for `ask_each`,
        which asks each person separately and so must know them before it posts."""
        ...
