"""Where the runtime finds a run's host, and the host of a hostless process.

A host is an `Interactor` (`workers.interaction.protocol`). Each run chooses one by
`conversation["host"]`, like ``slack``, ``terminal`` or ``api``. Each process's composition root
decides which hosts exist there. `Host`, `PausingRun` and `QuestionProgress` are the port's own
names, kept here for the runtime's imports.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from workers.interaction import (
    ContextChange,
    GroupInfo,
    Interactor,
    Outcome,
    PausingRun,
    QuestionInfo,
    QuestionProgress,
    Request,
    RunInfo,
)
from workers.logs import Log

Host = Interactor

__all__ = ["EndsSession", "Host", "InteractorRouter", "LogHost", "PausingRun", "QuestionProgress", "ShowsPlan"]

log = Log("parley.host")


@runtime_checkable
class EndsSession(Protocol):
    """A host that shows a run as a live session and ends it on a cancel.

    Slack's agent sessions are one. It is optional beside `Interactor`. A cancel of a running run
    closes no question. So without this, the session would be left "processing".
    """

    def run_cancelled(self, run: RunInfo) -> None: ...


@runtime_checkable
class ShowsPlan(Protocol):
    """A host that draws a live plan of the run, like Slack's `plan` block.

    It is optional beside `Interactor`. `plan_named` gives the steps an agent named ahead
    (`run.plan`). `plan_step` tells that step `key` is `in_progress`, `complete` or raised
    (`error`). A replayed step is not told again.
    """

    def plan_named(self, run: RunInfo, steps: list[str]) -> None: ...

    def plan_step(self, run: RunInfo, key: str, status: str) -> None: ...


def _about(run: RunInfo, question_id: str | None) -> dict[str, Any]:
    """The log fields of a line about one question of `run`.

    A paused run's own fields name the question it waits on, which may be another.
    """
    return {**run.log_context(), "interrupt_id": question_id}


class LogHost:
    """A host with no people: logs everything and parks every question.

    It serves a process with no real host for a run, like a worker without Slack credentials.
    Questions stay answerable through any host sharing Redis.
    """

    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        log.info("question waiting", **_about(run.record, run.interrupt_id), reason=request.reason)
        return Outcome(paused=True)

    def say(self, run: RunInfo, text: str) -> None:
        log.info("say", **run.log_context(), text=text)

    def finished(self, run: RunInfo, result: str) -> None:
        log.info("finished", **run.log_context(), result=result)

    def failed(self, run: RunInfo, reason: str) -> None:
        log.info("failed", **run.log_context(), reason=reason)

    def question_closed(self, run: RunInfo, question: QuestionInfo) -> None:
        log.info("question closed", **_about(run, question.id), state=question.state.value)

    def question_superseded(self, run: RunInfo, question: QuestionInfo, changes: list[ContextChange]) -> None:
        fields = [c.field for c in changes]
        log.info(
            "answer superseded: the facts changed",
            **_about(run, question.id),
            key=question.key,
            fields=fields,
        )

    def remind(self, run: RunInfo, question: QuestionInfo, *, last_call: bool = False) -> None:
        log.info("reminder", **_about(run, question.id), assignees=question.assignees, last_call=last_call)

    def claimed(self, run: RunInfo, question: QuestionInfo, *, by: str, released: bool) -> None:
        log.info("released" if released else "claimed", **_about(run, question.id), by=by)

    def group_progress(self, run: RunInfo, group: GroupInfo, progress: QuestionProgress) -> None:
        log.info("question progress", **run.log_context(), group=group.id, progress=progress.summary)

    def escalated(self, run: RunInfo, question: QuestionInfo, added: list[str]) -> None:
        log.info("escalated", **_about(run, question.id), added=added)

    def reassigned(self, run: RunInfo, question: QuestionInfo, *, by: str, to: str) -> None:
        log.info("reassigned", **_about(run, question.id), by=by, to=to)

    def people(self, run: RunInfo, ids: list[str]) -> list[str]:
        return list(ids)  # no directory to resolve user groups in


class InteractorRouter:
    """Finds the host for a run from its conversation reference."""

    def __init__(self, hosts: dict[str, Interactor] | None = None, default: Interactor | None = None) -> None:
        self._hosts: dict[str, Interactor] = dict(hosts or {})
        self._default: Interactor = default or LogHost()

    def register(self, kind: str, host: Interactor) -> None:
        self._hosts[kind] = host

    def for_conversation(self, conversation: dict[str, Any]) -> Interactor:
        return self._hosts.get(str(conversation.get("host", "")), self._default)

    def for_run(self, run: RunInfo) -> Interactor:
        return self.for_conversation(run.conversation)
