"""`AgentRun`: what an `@agent` function may do with its run, and nothing else.

The runtime's `Run` implements it. Agents, `workers.llm` and the shipped agents are typed
against this protocol. So the surface the README documents is the one a type checker enforces.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from workers.interaction import AnswerValue, Context, Decision, Request

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

Answers = dict[str, AnswerValue]
"""One question's answers, by item id."""


class Absent(Enum):
    """The type of `ABSENT`: a step that has not run recorded nothing."""

    ABSENT = "absent"


ABSENT = Absent.ABSENT
"""What `run.recorded(key)` returns for a step not yet run; a recorded None stays None."""


class AgentRun(Protocol):
    """One run of an agent, as the agent sees it: ask people, record steps, say things."""

    @property
    def run_id(self) -> str:
        """The run's id, the same in every log line, listing and message."""
        ...

    @property
    def started_by(self) -> str:
        """Who started the run: a Slack user id, or an API token's origin."""
        ...

    @property
    def data_dir(self) -> Path:
        """A directory for the agent's local files, shared by one installation's runs."""
        ...

    def ask(self, request: Request, key: str | None = None, context: Context | None = None) -> Answers:
        """Put `request` to people and park until answered.

        A replay returns the answers.
        """
        ...

    def ask_all(self, requests: dict[str, Request], context: dict[str, Context] | None = None) -> dict[str, Answers]:
        """Put every request at once, and resume once, after the last answer.

        Returns each one's answers by key.
        """
        ...

    def ask_any(self, requests: dict[str, Request], context: dict[str, Context] | None = None) -> tuple[str, Answers]:
        """Put every request at once, resuming on the first answer.

        Returns `(its key, its answers)`.
        """
        ...

    def ask_each(
        self,
        request: Request,
        quorum: int | None = None,
        *,
        key: str | None = None,
        context: Context | None = None,
    ) -> dict[str, Answers]:
        """Put `request` to each assignee separately, resuming at the quorum.

        Returns answers by user id.
        """
        ...

    def approve(
        self,
        action: str,
        args: dict[str, Any],
        *,
        schema: dict[str, Any] | type[BaseModel] | None = None,
        editable: bool | list[str] = True,
        key: str | None = None,
        **request_options: Any,
    ) -> Decision:
        """Ask a person to approve `action` with `args`, which they may edit first.

        The decision is bound to the args. Args too long to show whole are shown in part, and the
        decision holds them whole.
        """
        ...

    def ask_form(
        self,
        model: type[M],
        reason: str,
        key: str | None = None,
        context: Context | None = None,
        **request_options: Any,
    ) -> M:
        """Ask for `model`'s fields as a form and return a validated instance of it."""
        ...

    def step(self, key: str, fn: Callable[[], T]) -> T:
        """Run `fn` once per run and record its JSON result.

        A replay returns the record.
        """
        ...

    def recorded(self, key: str, *, branch: bool = False) -> Any:
        """What step `key` recorded, or `ABSENT` before it ran.

        Nothing runs or is recorded. With `branch`, code run only on `ABSENT` does the step's
        work and then calls `run.step(key, ...)`: what it asks and says is counted as the step's.
        """
        ...

    def plan(self, steps: list[str]) -> None:
        """Name the run's steps ahead, in order, for a host that draws a live plan."""
        ...

    def say(self, text: str) -> None:
        """Post progress to the run's conversation, once: a replay posts nothing."""
        ...

    def secret(self, item_id: str) -> str:
        """The clear value of the secret item `item_id` this run was last given."""
        ...

    def context_changed(self, key: str) -> bool:
        """Whether `key`'s last answer was asked again because its facts changed."""
        ...

    def history(self, event: str, **detail: Any) -> None:
        """Add an entry to the run's history, shown by `parley runs show`.

        Token usage is one such entry.
        """
        ...


AgentFn = Callable[[AgentRun, str], str]
"""An agent: given its run and the text it was started with, the answer to post when it ends."""
