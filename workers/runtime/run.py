"""The `run` an agent receives: `ask`, `step` and `say`, all replay-safe.

An execution replays the agent from the start. Answered questions and completed steps return
their journalled results. The first unanswered question parks the run and raises `Suspend`. That
ends the RQ job as finished.

`Run` is the author's face and nothing more. It satisfies `workers.AgentRun`. The execution it
stands on (`execution.py`) keeps the journal and the fenced writes. A host sees the run through
`host_view.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from workers.agent_run import ABSENT
from workers.exceptions import AgentError
from workers.interaction import AnswerValue, Context, Decision, Request
from workers.interaction.approval import approval_request, approved_args, decision_of
from workers.interaction.forms import form_request, form_result
from workers.runtime import ask_each, ask_group, ask_one
from workers.runtime.arg_schema import problems
from workers.runtime.execution import Execution
from workers.store import journal_names as names
from workers.store.records import InterruptRecord

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class Run:
    """One run of an agent, as its author's code sees it (`workers.AgentRun`)."""

    def __init__(self, execution: Execution) -> None:
        self._execution = execution
        self._answered: dict[str, InterruptRecord] = {}  # the question whose answers `ask` of a key last returned

    @property
    def run_id(self) -> str:
        return self._execution.run_id

    @property
    def started_by(self) -> str:
        return self._execution.started_by

    @property
    def data_dir(self) -> Path:
        """A directory for agents' local resources, shared by the machine's workers.

        Trackers and logs are such resources.
        """
        data_dir = self._execution.settings.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        return data_dir

    def step(self, key: str, fn: Callable[[], T]) -> T:
        """Run `fn` once per run and record its JSON result; a replay returns the record."""
        return self._execution.step(key, fn)

    def plan(self, steps: list[str]) -> None:
        """Name the run's steps ahead, in order reached, for a host that draws plans."""
        self._execution.name_steps(steps)

    def recorded(self, key: str, *, branch: bool = False) -> Any:
        """What step `key` recorded, or `ABSENT` before it ran. It runs and records nothing.

        With `branch`, the code after a read finding `ABSENT` does the step's work and then calls
        `run.step(key, ...)`. What it asks, says and adds counts as the step's, since a replay
        takes the other branch (`Execution.read_step`).
        """
        entry = self._execution.read_step(key, branch=branch)
        return ABSENT if entry is None else entry["v"]

    def history(self, event: str, **detail: Any) -> None:
        """Add an entry to the run's history (e.g. token usage), shown by `parley runs show`, once.

        A replay adds nothing: each call is counted per execution, as `say`'s are. A recorded step
        counts the entries its function added, which a replay never runs (`Execution.step`).
        """
        ex = self._execution
        ex.once(names.history(ex.tally.added()), lambda: ex.store.add_history(ex.run_id, event, "agent", **detail))

    def say(self, text: str) -> None:
        """Post progress to the run's conversation, once: a replay posts nothing.

        Each call is counted per execution. A recorded step counts the says its function made,
        which a replay never runs (`Execution.step`). So each later say keeps its number.
        """
        ex = self._execution
        ex.once(names.say(ex.tally.said()), lambda: ex.host.say(ex.record, text))

    def ask(self, request: Request, key: str | None = None, context: Context | None = None) -> dict[str, AnswerValue]:
        """Put `request` to people and return their answers by item id.

        The first time, the run parks until someone answers. On replay the recorded answers are
        returned. Asking the same `key` again, after an unusable answer, opens a new attempt. The fourth
        attempt fails the run.

        `context` is the JSON-able facts the person decides on. It is at most 2,000 characters of
        canonical JSON. Otherwise `ContextError` is raised before anything is recorded. It is shown with
        the question and recorded with the answer. On replay, an answer given on facts other than the
        current `context` is void for this run. The question is then asked again as the key's next
        attempt, showing what changed.

        A secret item's value is returned here, and by `secret`, and nowhere else. It is sealed at rest
        under `PARLEY_SECRET_KEY` until the run ends. Without the key, a request with a secret item
        fails the run (`SecretKeyMissing`). That happens before anything is recorded.
        """
        asked = ask_one.ask(self._execution, request, key, context)
        self._execution.tally.open_secrets(asked.answered.id if asked.answered else None, asked.secrets)
        if asked.answered is not None:
            self._answered[asked.key] = asked.answered
        return asked.values

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
        """Ask a person to approve `action` with `args`.

        They approve, edit the editable args first, or reject. The approval is bound to `args`, as
        `ask`'s `context` binds an answer. Proposed args that differ on replay void it. It is then asked
        again, showing old → new. An edited approval is bound to the edited args too. So an agent
        proposing what was approved is not asked again. `schema` (JSON Schema or a pydantic model) types
        the editable args. Without it, their types are inferred from the values. A schema no edit could
        be checked against fails the run before anything is asked (`SchemaUnusable`).

        Args over the 2,000 characters an approval binds have their longest values shown in part: a
        note, their start and their sha256 (`approval_in_part`). Those are bound by that digest and
        never editable. The decision's args hold them whole, with the edits applied.
        """
        request = approval_request(action, args, schema=schema, editable=editable, in_part=True, **request_options)
        assert request.approval is not None
        if request.approval.input_schema is not None:
            problems(request.approval.input_schema, args)  # SchemaUnusable, as the API's approvals
        key = key or self._execution.keys.next_key()  # the key `ask` would give it
        values = self.ask(request, key=key, context=request.approval.args)  # bound to the args as shown
        answered = self._answered.get(key)
        shown = decision_of(answered.request if answered else request, values, answered.answered_by if answered else "")
        decision = shown.model_copy(update={"args": approved_args(shown, args)})  # values shown in part, whole
        if decision.edited and answered is not None:
            ex, fields = self._execution, [c[0] for c in decision.changes]
            ex.once(
                names.edits(answered.id),
                lambda: ex.store.add_history(
                    ex.run_id, "approved with edits", decision.by, interrupt_id=answered.id, key=key, fields=fields
                ),
            )
        return decision

    def ask_form(
        self,
        model: type[M],
        reason: str,
        key: str | None = None,
        context: Context | None = None,
        **request_options: Any,
    ) -> M:
        """Ask for `model`'s fields and return the instance.

        Each field is one item (see `workers.interaction.forms`). The model's own validators run where
        the answers are accepted. Their errors are the form's, and nothing is accepted. A field no item
        can ask for is refused here, naming it (`FormError`). That happens before anything is recorded
        or posted.
        """
        request = form_request(model, reason, **request_options)
        return form_result(model, self.ask(request, key=key, context=context))

    def ask_all(
        self, requests: dict[str, Request], context: dict[str, Context] | None = None
    ) -> dict[str, dict[str, AnswerValue]]:
        """Put every request at once and return each one's answers by its key.

        Each request has its own message and assignees. The run parks until all are answered and resumes
        once, after the last answer. Each question is locked as soon as it is answered. It expires by
        its own `on_expiry`. The keys are ask keys: asking one again opens its next attempt, within the
        same limit. `context` maps a key to the facts its answer is bound to, as for `ask`.
        """
        return ask_group.ask_all(self._execution, requests, context)

    def ask_any(
        self, requests: dict[str, Request], context: dict[str, Context] | None = None
    ) -> tuple[str, dict[str, AnswerValue]]:
        """Put every request at once, resume on the first answer, return `(key, answers)`.

        The other questions close as "no longer needed". A late answer to one is refused with that
        reason.
        """
        return ask_group.ask_any(self._execution, requests, context)

    def ask_each(
        self,
        request: Request,
        quorum: int | None = None,
        *,
        key: str | None = None,
        context: Context | None = None,
    ) -> dict[str, dict[str, AnswerValue]]:
        """Put `request` to each assignee separately, returning answers by user id.

        One message shows progress, like "2 of 3 answered: @A, @B". With `request.show_answers`, it
        shows what they answered too. Each person answers once, for themselves. The run resumes when
        `quorum` people answered, by default everyone. The others' answers are then no longer needed.
        """
        return ask_each.ask_each(self._execution, request, quorum, key=key, context=context)

    def secret(self, item_id: str) -> str:
        """The value of secret item `item_id` as last answered in this execution.

        See `ask`. A tool reads here a secret the model saw only a placeholder of (`workers.llm`).
        Raises `AgentError` when no secret answer to `item_id` was returned yet.
        """
        secrets = self._execution.tally.secrets
        if item_id not in secrets:
            raise AgentError(f"no secret answer to {item_id!r} in this run yet; ask it with run.ask first")
        return secrets[item_id]

    def context_changed(self, key: str) -> bool:
        """Whether the last `ask` of `key` was asked again because facts changed.

        True when the answer before it was void. False otherwise, and before any `ask` of `key` this
        execution.
        """
        return self._execution.keys.changed(key)


def execution_of(run: Run) -> Execution:
    """The execution under `run`, for Parley's own agents and tests, never authors.

    The built-in `question` agent writes through it. A test agent reads its epoch.
    """
    return run._execution


def opened_secrets(run: Run) -> frozenset[str]:
    """Every secret value `run`'s execution opened so far, for the runtime to mask, never authors.

    It holds an answer asked again too, which `run.secret` no longer returns.
    """
    return frozenset(run._execution.tally.opened)
