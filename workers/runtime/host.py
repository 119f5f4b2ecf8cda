"""What the runtime needs from a host beyond asking: telling people how a run goes.

A host is chosen per run by `conversation["host"]` (``slack``, ``terminal``, ...).
The composition root of each process decides which hosts exist there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from workers.interaction import ContextChange, Outcome, Request, RunView
from workers.logs import Log
from workers.store.groups import GroupRecord
from workers.store.records import InterruptRecord, RunRecord


@dataclass(frozen=True)
class QuestionProgress:
    """How far a question put to each person separately (`ask_each`) is: shown with it, updated per answer.

    `answers` (user id -> the member's answers) is filled only when the request asks to
    show what people answered (`show_answers`); `answering` names the person a host that
    asks in sequence (the terminal) is asking now.
    """

    asked: tuple[str, ...]
    answered: tuple[str, ...]
    need: int
    answers: tuple[tuple[str, InterruptRecord], ...] = ()
    answering: str = ""
    closed: bool = False

    @property
    def summary(self) -> str:
        """e.g. "2 of 3 answered" (with "2 needed" when a quorum is below everyone)."""
        need = f", {self.need} needed" if self.need < len(self.asked) else ""
        return f"{len(self.answered)} of {len(self.asked)} answered{need}"


log = Log("parley.host")


class PausingRun(RunView, Protocol):
    """What a host that pauses may read and record about the run that asks.

    A pause/resume host posts a question once and must find it on replay: it reads
    where the question was posted and records where it posts it, nothing more. When
    `question_may_be_posted`, an earlier execution opened the question and may have died
    inside the post: the host looks for its message before posting it.
    """

    @property
    def record(self) -> RunRecord: ...

    @property
    def question_message(self) -> dict[str, Any]: ...

    @property
    def question_may_be_posted(self) -> bool: ...

    @property
    def interrupt(self) -> InterruptRecord | None:
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
    def asked_separately(self) -> list[InterruptRecord]:
        """For `ask_each`, each person's own question behind the shared message; empty otherwise."""
        ...

    def record_assignees(
        self, assignees: list[str], groups: dict[str, list[str]], escalate_to: list[str] | None = None
    ) -> None:
        """Record who may answer the current question, user groups resolved to `groups`' members,
        before it is posted (`workers.store.people`)."""
        ...


class Host(Protocol):
    """Puts questions to people (as an `Interactor` does, with the run's own record at hand)
    and reports progress and outcomes in the run's conversation."""

    def solicit(self, request: Request, run: PausingRun) -> Outcome: ...

    def say(self, run: RunRecord, text: str) -> None: ...

    def finished(self, run: RunRecord, result: str) -> None: ...

    def failed(self, run: RunRecord, reason: str) -> None: ...

    def question_closed(self, run: RunRecord, interrupt: InterruptRecord) -> None:
        """Show that the question closed (answered, expired, cancelled). It may be called again for
        the same close, after a crash before the execution's next write or by a worker that lost
        the run: a second call must show nothing new (a message replaced by the same content, a
        webhook announced once per event)."""
        ...

    def question_superseded(self, run: RunRecord, interrupt: InterruptRecord, changes: list[ContextChange]) -> None:
        """Mark an answered question void: the facts it was answered on changed (`changes`); it is asked again."""
        ...

    def remind(self, run: RunRecord, interrupt: InterruptRecord) -> None: ...

    def group_progress(self, run: RunRecord, group: GroupRecord, progress: QuestionProgress) -> None:
        """Show how far an `ask_each` question is on the message its people share (`progress.closed`: locked)."""
        ...

    def escalated(self, run: RunRecord, interrupt: InterruptRecord, added: list[str]) -> None:
        """The question was escalated: `added` may answer it now; tell them and show it."""
        ...

    def people(self, run: RunRecord, ids: list[str]) -> list[str]:
        """The people `ids` name, each user group (`S…`) replaced by its members, for `ask_each`,
        which asks each person separately and so must know them before it posts."""
        ...


class LogHost:
    """A host with no people: logs everything and parks every question.

    Used where a process has no real host for a run (a worker without Slack
    credentials, say); questions stay answerable through any host that shares Redis.
    """

    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        log.info("question waiting", run_id=run.run_id, interrupt_id=run.interrupt_id, reason=request.reason)
        return Outcome(paused=True)

    def say(self, run: RunRecord, text: str) -> None:
        log.info("say", **run.log_context(), text=text)

    def finished(self, run: RunRecord, result: str) -> None:
        log.info("finished", **run.log_context(), result=result)

    def failed(self, run: RunRecord, reason: str) -> None:
        log.info("failed", **run.log_context(), reason=reason)

    def question_closed(self, run: RunRecord, interrupt: InterruptRecord) -> None:
        log.info("question closed", **run.log_context(), state=interrupt.state.value)

    def question_superseded(self, run: RunRecord, interrupt: InterruptRecord, changes: list[ContextChange]) -> None:
        fields = [c.field for c in changes]
        log.info("answer superseded: the facts changed", **run.log_context(), key=interrupt.key, fields=fields)

    def remind(self, run: RunRecord, interrupt: InterruptRecord) -> None:
        log.info("reminder", **run.log_context(), assignees=interrupt.assignees)

    def group_progress(self, run: RunRecord, group: GroupRecord, progress: QuestionProgress) -> None:
        log.info("question progress", **run.log_context(), group=group.id, progress=progress.summary)

    def escalated(self, run: RunRecord, interrupt: InterruptRecord, added: list[str]) -> None:
        log.info("escalated", **{**run.log_context(), "interrupt_id": interrupt.id}, added=added)

    def people(self, run: RunRecord, ids: list[str]) -> list[str]:
        return list(ids)  # no directory to resolve user groups in


class HostRouter:
    """Finds the host for a run from its conversation reference."""

    def __init__(self, hosts: dict[str, Host] | None = None, default: Host | None = None) -> None:
        self._hosts: dict[str, Host] = dict(hosts or {})
        self._default: Host = default or LogHost()

    def register(self, kind: str, host: Host) -> None:
        self._hosts[kind] = host

    def for_conversation(self, conversation: dict[str, Any]) -> Host:
        return self._hosts.get(str(conversation.get("host", "")), self._default)

    def for_run(self, run: RunRecord) -> Host:
        return self.for_conversation(run.conversation)
