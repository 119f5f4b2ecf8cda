"""`Interactor`: the one contract between Parley's runtime and a host (Slack, the terminal, ...).

A host puts questions to people (`solicit`). It tells them how the run goes: `say`, `finished`,
`failed`, a question `closed`, `superseded`, `remind`, `group_progress`, `escalated`,
`reassigned`. It sees runs and questions only through the port's views
(`workers.interaction.views`). A new host must implement `Interactor` and pass
`tests/runtime/test_interactor_contract.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from workers.interaction.context import Context, ContextChange
from workers.interaction.models import Outcome, Request
from workers.interaction.renamed import renamed
from workers.interaction.views import GroupInfo, QuestionInfo, QuestionProgress, RunInfo


@runtime_checkable
class AskingRun(Protocol):
    """What a host may know about the asking run: identity and where it talks."""

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
        """The facts the person decides on, shown with the question (None: none given)."""
        ...

    @property
    def context_changes(self) -> list[ContextChange]:
        """What changed, field by field, since an answer given on other facts."""
        ...


class PausingRun(AskingRun, Protocol):
    """What a pausing host may read and record about the asking run.

    A pause/resume host posts a question once and must find it on replay. It reads where the
    question was posted and records where it posts it, nothing more. `question_may_be_posted` means
    an earlier execution opened the question. That execution may have died inside the post. The host
    then looks for its message before posting it.
    """

    @property
    def record(self) -> RunInfo: ...

    @property
    def question_message(self) -> dict[str, Any]: ...

    @property
    def question_may_be_posted(self) -> bool: ...

    @property
    def interrupt(self) -> QuestionInfo | None:
        """The current question as recorded: who may answer, and their user groups."""
        ...

    def record_question_message(
        self, message: dict[str, Any], *, parked_next: bool = False, shown: Sequence[Any] = ()
    ) -> None:
        """Record where the question was posted. `parked_next`: nothing else happens before the
        run parks, and the park records it in the same step (one write fewer). `shown`: the
        blocks the host sent, digested for the question's receipt where receipts are signed."""
        ...

    @property
    def question_progress(self) -> QuestionProgress | None:
        """How far an `ask_each` question is, or None for other questions."""
        ...

    @property
    def asked_separately(self) -> Sequence[QuestionInfo]:
        """For `ask_each`, each person's own question behind the shared message.

        Empty for other questions.
        """
        ...

    def record_assignees(
        self, assignees: list[str], groups: dict[str, list[str]], escalate_to: list[str] | None = None
    ) -> None:
        """Record who may answer the current question, before it is posted.

        User groups are resolved to their members in `groups`.
        """
        ...


@runtime_checkable
class Interactor(Protocol):
    """Puts questions to people and reports progress and outcomes in the run's conversation.

    A pause/resume host (Slack) posts the question and returns `Outcome(paused=True)`. The answers
    arrive out of band. A synchronous host (the terminal) returns them.

    Some calls may repeat after a crash replay, or from a worker that lost the run. These are
    `solicit`, `question_closed`, `question_superseded` and `group_progress`. The second call must
    show nothing new. The runtime journals the others, so each is called once for what it shows.
    `remind` is called once per reminder.
    """

    def solicit(self, request: Request, run: PausingRun) -> Outcome: ...

    def say(self, run: RunInfo, text: str) -> None: ...

    def finished(self, run: RunInfo, result: str) -> None: ...

    def failed(self, run: RunInfo, reason: str) -> None: ...

    def question_closed(self, run: RunInfo, question: QuestionInfo) -> None:
        """Show that the question closed (answered, expired, cancelled, no longer needed)."""
        ...

    def question_superseded(self, run: RunInfo, question: QuestionInfo, changes: list[ContextChange]) -> None:
        """Mark an answered question void, since its facts changed (`changes`).

        It is asked again.
        """
        ...

    def remind(self, run: RunInfo, question: QuestionInfo, *, last_call: bool = False) -> None:
        """Remind the people asked; with `last_call`, say when it expires."""
        ...

    def claimed(self, run: RunInfo, question: QuestionInfo, *, by: str, released: bool) -> None:
        """Show that `by` claimed the question (`Request.claim`), or released it (`released`)."""
        ...

    def group_progress(self, run: RunInfo, group: GroupInfo, progress: QuestionProgress) -> None:
        """Show an `ask_each` question's progress on the message its people share.

        `progress.closed` means the question is locked.
        """
        ...

    def escalated(self, run: RunInfo, question: QuestionInfo, added: list[str]) -> None:
        """The question was escalated: `added` may answer it now; tell them and show it."""
        ...

    def reassigned(self, run: RunInfo, question: QuestionInfo, *, by: str, to: str) -> None:
        """`by` handed the question to `to`: tell `to`, show the change."""
        ...

    def people(self, run: RunInfo, ids: list[str]) -> list[str]:
        """The people `ids` name, each user group (`S…`) replaced by its members.

        `ask_each` asks each person separately, so it must know them before posting.
        """
        ...


_RENAMED = {"RunView": "AskingRun"}  # deprecated name -> its new name


def __getattr__(name: str) -> Any:
    """An old name, importable for a while with a DeprecationWarning."""
    return renamed(__name__, name, _RENAMED, globals())
