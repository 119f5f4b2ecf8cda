"""What a host is handed when a run asks: a `PausingRun` over the execution.

A host reads who asks, where the run talks and the current question. It records where it posted
the question and who may answer it. It sees nothing else of the execution: no journal, no store,
no agent API. `HostView` stands for one question: `run.ask`, or each of `ask_all`/`ask_any`.
`EachView` stands for the message `ask_each`'s people share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workers.interaction import Context, ContextChange
from workers.receipts.canonical import blocks_digest
from workers.runtime.execution import Execution
from workers.runtime.group_close import progress_of
from workers.runtime.host import QuestionProgress
from workers.store.groups import GroupRecord
from workers.store.records import InterruptRecord, RunRecord


def with_shown_digest(execution: Execution, message: dict[str, Any], shown: Sequence[Any]) -> dict[str, Any]:
    """`message` with the digest of the blocks `shown`, where this worker signs receipts.

    The digest is the receipt's `shown_digest`. Without a key it would never be read, so it is not made.
    """
    if not shown or not execution.signs_receipts:
        return message
    return {**message, "blocks_digest": blocks_digest(list(shown))}


class HostView:
    """The run as a host sees it while one question is put: a `PausingRun`.

    It keeps the question as the host records it: message and assignees. So the park that follows
    records what the host did.
    """

    def __init__(self, execution: Execution, interrupt: InterruptRecord, *, opened_earlier: bool) -> None:
        self._execution = execution
        self._interrupt = interrupt
        self._opened_earlier = opened_earlier  # an earlier execution opened the question

    @property
    def run_id(self) -> str:
        return self._execution.run_id

    @property
    def started_by(self) -> str:
        return self._execution.started_by

    @property
    def conversation(self) -> dict[str, Any]:
        return self._execution.conversation

    @property
    def record(self) -> RunRecord:
        return self._execution.record

    @property
    def interrupt_id(self) -> str:
        return self._interrupt.id

    @property
    def interrupt(self) -> InterruptRecord:
        """The question as recorded, with what the host recorded since."""
        return self._interrupt

    @property
    def question_context(self) -> Context | None:
        return self._interrupt.context

    @property
    def context_changes(self) -> list[ContextChange]:
        return list(self._interrupt.context_changes)

    @property
    def question_message(self) -> dict[str, Any]:
        """Where the question was posted before, if it was, since it is posted once."""
        return self._interrupt.message

    @property
    def question_may_be_posted(self) -> bool:
        """True when an earlier execution opened the question and recorded no message.

        That execution may have died inside the post, after the message was made.
        """
        return self._opened_earlier and not self.question_message.get("ts")

    @property
    def question_progress(self) -> QuestionProgress | None:
        """A single question has no per-person progress (see `ask_each`)."""
        return None

    @property
    def asked_separately(self) -> list[InterruptRecord]:
        return []

    def record_question_message(
        self, message: dict[str, Any], *, parked_next: bool = False, shown: Sequence[Any] = ()
    ) -> None:
        """Record where the question was posted, so it is never posted twice.

        With `parked_next`, the park that follows records it. A crash before then leaves the question
        without a `ts`. The replay then finds the message by its metadata.
        """
        message = with_shown_digest(self._execution, message, shown)
        iid, store = self._interrupt.id, self._execution.store
        if not parked_next:
            self._execution.durable(lambda: store.set_message(iid, message), "record where the question was posted")
        self._interrupt = self._interrupt.model_copy(update={"message": message})

    def record_assignees(
        self, assignees: list[str], groups: dict[str, list[str]], escalate_to: list[str] | None = None
    ) -> None:
        """Record who may answer, user groups resolved, before the question is posted."""
        ex, iid, team = self._execution, self._interrupt.id, str(self.conversation.get("team", ""))
        asked = ex.read(lambda: ex.store.away.stand_ins(team, assignees).people, "read who is away")
        ex.durable(lambda: ex.store.people.resolve(iid, asked, groups, escalate_to), "record who is asked")
        update: dict[str, Any] = {"assignees": asked, "groups": groups}
        if escalate_to is not None:
            update["escalate_to"] = escalate_to
        self._interrupt = self._interrupt.model_copy(update=update)


class EachView:
    """The run as a host sees it while `ask_each` asks: a `PausingRun`.

    The group's shared message is the question's, and the view tells how far the group is.
    """

    def __init__(
        self, execution: Execution, group: GroupRecord, members: list[InterruptRecord], *, opened_earlier: bool
    ) -> None:
        self._execution, self._group, self._opened_earlier = execution, group, opened_earlier
        self.members = members  # each person's own question; the caller replaces one as it is answered
        self.answering = ""  # the person a host that asks in turn (the terminal) is asking now

    run_id = property(lambda self: self._execution.run_id)
    started_by = property(lambda self: self._execution.started_by)
    conversation = property(lambda self: self._execution.conversation)
    record = property(lambda self: self._execution.record)
    interrupt_id = property(lambda self: self._group.id)
    question_context = property(lambda self: self.members[0].context if self.members else None)
    context_changes = property(lambda self: list(self.members[0].context_changes) if self.members else [])
    question_message = property(lambda self: self._group.message)
    # The shared message stands for several questions, one per person (`asked_separately`): no single
    # question; user groups were resolved before the group opened (`ask_group._people`).
    interrupt = property(lambda self: None)

    @property
    def question_may_be_posted(self) -> bool:
        return self._opened_earlier and not self._group.message.get("ts")

    @property
    def question_progress(self) -> QuestionProgress:
        return progress_of(self._group, self.members, answering=self.answering)

    @property
    def asked_separately(self) -> list[InterruptRecord]:
        return list(self.members)

    def record_assignees(
        self, assignees: list[str], groups: dict[str, list[str]], escalate_to: list[str] | None = None
    ) -> None:
        """Never called, since without a single `interrupt` no user groups remain."""
        raise TypeError("ask_each resolves user groups before its questions open")

    def record_question_message(
        self, message: dict[str, Any], *, parked_next: bool = False, shown: Sequence[Any] = ()
    ) -> None:
        """Record where the shared message was posted, at once whatever `parked_next` says.

        The group's park does not record the message.
        """
        message = with_shown_digest(self._execution, message, shown)
        gid, groups = self._group.id, self._execution.store.groups
        self._execution.durable(lambda: groups.set_message(gid, message), "record where it was posted")
        self._group = self._group.model_copy(update={"message": message})
