"""What a host sees of a run and its questions: read-only views typed in the port.

The runtime's own records satisfy these protocols structurally. So a host types against the
port, never the store. A host for a new surface reads these and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from workers.interaction.context import ContextChange
from workers.interaction.models import Answer, Request


class QuestionState(StrEnum):
    """Where one question is: being posted, open for answers, or closed and why."""

    POSTING = "posting"
    OPEN = "open"
    ANSWERED = "answered"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    NOT_NEEDED = "not_needed"  # one of several questions, closed because the run went on without it


class RunInfo(Protocol):
    """A run as a host sees it: who started which agent, and where it talks."""

    @property
    def id(self) -> str: ...

    @property
    def agent(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def started_by(self) -> str: ...

    @property
    def conversation(self) -> dict[str, Any]: ...

    def log_context(self) -> dict[str, Any]:
        """The correlation fields of every log line about this run.

        These are run_id, team, channel and user.
        """
        ...


class QuestionInfo(Protocol):
    """One question of a run as a host sees it: what, of whom, and where it stands."""

    @property
    def id(self) -> str: ...

    @property
    def run_id(self) -> str: ...

    @property
    def key(self) -> str: ...

    @property
    def request(self) -> Request: ...

    @property
    def assignees(self) -> list[str]: ...

    @property
    def asked_at(self) -> float: ...

    @property
    def expires_at(self) -> float | None: ...

    @property
    def claimed_by(self) -> str:
        """Who claimed the question (`Request.claim`), or empty."""
        ...

    @property
    def standing_in(self) -> dict[str, list[dict[str, Any]]]:
        """Delegates asked for people away: `{delegate: [{"user": …, "until": …}]}`."""
        ...

    @property
    def claimed_from(self) -> list[str]:
        """Who was asked before the claim, to answer again once released."""
        ...

    @property
    def state(self) -> QuestionState: ...

    @property
    def answers(self) -> list[Answer]: ...

    @property
    def answered_by(self) -> str: ...

    @property
    def answered_at(self) -> float | None: ...

    @property
    def closed_by(self) -> str: ...

    @property
    def declined(self) -> bool:
        """Whether a person asked closed it with Decline, rather than anyone cancelling it."""
        ...

    @property
    def team(self) -> str: ...

    @property
    def message(self) -> dict[str, Any]:
        """Where the host showed it (e.g. Slack's channel and ts), empty until shown."""
        ...

    @property
    def context(self) -> dict[str, Any] | None: ...

    @property
    def context_changes(self) -> list[ContextChange]: ...

    @property
    def groups(self) -> dict[str, list[str]]:
        """User group id -> its members when asked (the assignees hold the members)."""
        ...

    @property
    def escalate_to(self) -> list[str]: ...

    @property
    def escalated_at(self) -> float | None: ...

    @property
    def handoffs(self) -> list[dict[str, Any]]:
        """Reassignments, oldest first: by, from, to, at."""
        ...


class GroupInfo(Protocol):
    """Several questions asked at once (`ask_all`, `ask_any`, `ask_each`) as a host sees them."""

    @property
    def id(self) -> str: ...

    @property
    def run_id(self) -> str: ...

    @property
    def members(self) -> list[str]:
        """The ids of its questions."""
        ...

    @property
    def state(self) -> str: ...

    @property
    def people(self) -> dict[str, str]:
        """`ask_each`: user id -> the id of that person's own question."""
        ...

    @property
    def message(self) -> dict[str, Any]:
        """`ask_each`: the one message its people share; empty until shown."""
        ...


@dataclass(frozen=True)
class QuestionProgress:
    """How far an `ask_each` question is, shown with it and updated per answer.

    `answers` maps each user id to their answered question. It is filled only when the request says
    `show_answers`. `answering` names the person being asked now, by a host that asks in turn (the
    terminal).
    """

    asked: tuple[str, ...]
    answered: tuple[str, ...]
    need: int
    answers: tuple[tuple[str, QuestionInfo], ...] = ()
    answering: str = ""
    closed: bool = False

    @property
    def summary(self) -> str:
        """e.g. "2 of 3 answered", with "2 needed" when a quorum is below everyone."""
        need = f", {self.need} needed" if self.need < len(self.asked) else ""
        return f"{len(self.answered)} of {len(self.asked)} answered{need}"
