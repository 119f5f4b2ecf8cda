"""One driver for the framework adapters: pauses go out in rounds, answers come back.

It is modelled on Pydantic AI's `DeferredToolRequests` and `DeferredToolResults`. Whatever a
framework waits for after one call is one round, a list of `Pending`. That may be interrupts,
tool approvals or external calls. The people's answers to it are one `Replies`. The driver owns
the rest:

- The loop: each call into the framework is one `run.step`, so a replay repeats no call.
- The keys (`Keys`): call `n` (from 1) is step `{name}:{n}`. Its pauses ask under
  `{name}:{n}:{id}`.
- The bound: after at most `MAX_ROUNDS` rounds of answers, `TooManyRounds` fails the run.
- The ask: one pause is `run.ask`, or `run.approve` for an approval. Several are one
  `run.ask_all`.

An adapter keeps two translations. Its framework's pauses become pending questions. The replies
become the framework's resume input. The first call gets no resume input (None). A run paused
under an earlier version's keys goes on under them (`drive`'s `earlier`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from workers.agent_run import ABSENT, AgentRun, Answers
from workers.exceptions import AgentError
from workers.interaction import Context, Decision, Request
from workers.interaction.approval import decision_of

R = TypeVar("R")
Reply = Answers | Decision
"""A pause's answer: its answers by item id, or a `Decision` when the pause is an approval."""
Replies = dict[str, Reply]
"""A round's answers by pause id: the framework's resume input is made from these."""

MAX_ROUNDS = 100
"""Rounds of answers one adapter call may ask for; the same for every framework.

A framework that pauses once more after this many rounds fails the run with `TooManyRounds`."""


class TooManyRounds(AgentError):
    """A framework still pausing after `MAX_ROUNDS` rounds of answers.

    The run fails, with no retry.
    """


@dataclass(frozen=True)
class Pending:
    """One thing the framework waits for, as the question answering it.

    `id` is unique within its round and stable on replay. A request carrying an `approval` is
    answered as a `Decision`. Its context is the args it binds.
    """

    id: str
    request: Request
    context: Context | None = None


class Framework(Protocol[R]):
    """What an adapter gives the driver: one framework call, and two translations."""

    def call(self, step: str, resume: R | None) -> dict[str, Any]:
        """Call the framework and return the outcome as JSON.

        After the first call, it resumes with `resume`.
        """
        ...

    def pauses(self, step: str, outcome: dict[str, Any]) -> list[Pending] | None:
        """The framework's pauses in `outcome` as pending questions, or None once ended."""
        ...

    def resume(self, outcome: dict[str, Any], pending: list[Pending], replies: Replies) -> R:
        """The replies to `pending` as the framework's resume input."""
        ...

    def output(self, step: str, outcome: dict[str, Any]) -> Any:
        """The framework's output, from the outcome of its last call (`step`)."""
        ...


@dataclass(frozen=True)
class Keys:
    """How a driven framework's calls and pauses are keyed.

    Steps are `<name>:<n>`, and asks `<step>:<id>`. `first` and `sep` differ from the defaults only
    for earlier versions' keys.
    """

    name: str
    first: int = 1
    sep: str = ":"

    def step(self, n: int) -> str:
        """The step of call `n` (counted from 1)."""
        return f"{self.name}{self.sep}{n - 1 + self.first}"

    def ask(self, step: str, pause_id: str) -> str:
        """The ask key of pause `pause_id` of the round that `step` stopped at."""
        return f"{step}{self.sep}{pause_id}"


def drive(
    run: AgentRun, name: str, framework: Framework[R], *, what: str = "the agent", earlier: Keys | None = None
) -> Any:
    """Call `framework` until it ends, asking people each round of pauses.

    Returns its output. `earlier`: the keys an earlier version gave this adapter's calls. A run
    whose first call was recorded under them goes on under them. That is a run paused across an
    upgrade. So nothing runs twice.
    """
    keys = Keys(name)
    if earlier is not None and run.recorded(earlier.step(1)) is not ABSENT:
        keys = earlier
    resume: R | None = None
    n = 0
    while True:
        n += 1
        step = keys.step(n)
        call: Callable[[], dict[str, Any]] = partial(framework.call, step, resume)
        outcome = run.step(step, call)
        pending = framework.pauses(step, outcome)
        if pending is None:
            return framework.output(step, outcome)
        if n > MAX_ROUNDS:
            raise TooManyRounds(
                f"{what} was still pausing after {MAX_ROUNDS} rounds of answers "
                f"(the bound MAX_ROUNDS of workers.integrations.driver); giving up at step {step}"
            )
        resume = framework.resume(outcome, pending, ask(run, keys, step, pending))


def ask(run: AgentRun, keys: Keys, step: str, pending: list[Pending]) -> Replies:
    """Ask for a round at once, so the run parks and resumes once.

    Returns replies by pause id. One pause is one question: `run.approve` for an approval, with its
    history of edits. Several are one `run.ask_all`. The approvals among them are read back as
    `Decision`s.
    """
    if len(pending) == 1:
        [only] = pending
        return {only.id: _ask_one(run, keys.ask(step, only.id), only)}
    by_key = {keys.ask(step, p.id): p for p in pending}
    context = {k: p.context for k, p in by_key.items() if p.context is not None}
    got = run.ask_all({k: p.request for k, p in by_key.items()}, context)
    return {p.id: decision_of(p.request, got[k]) if p.request.approval else got[k] for k, p in by_key.items()}


def _ask_one(run: AgentRun, key: str, pause: Pending) -> Reply:
    if pause.request.approval is None:
        return run.ask(pause.request, key=key, context=pause.context)
    return run.approve(key=key, **approval_arguments(pause.request))


def approval_arguments(request: Request) -> dict[str, Any]:
    """The arguments of `run.approve` (and `approval_request`) that build `request` again."""
    approval = request.approval
    if approval is None:
        raise AgentError("this request is not an approval")
    options = request.model_dump(exclude={"items", "approval", "reason"}, exclude_defaults=True)
    return {
        "action": approval.action,
        "args": approval.args,
        "schema": approval.input_schema,
        "editable": approval.editable,
        "standing": approval.standing,
        "reason": request.reason,
        **options,
    }
