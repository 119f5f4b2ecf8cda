"""The `run` object an agent receives: `ask`, `step` and `say`, all replay-safe.

An execution replays the agent from the start. Answered questions and completed
steps return their journalled results; the first unanswered question parks the
run and raises `Suspend`, which ends the RQ job as finished.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from workers import metrics
from workers.agent_run import ABSENT
from workers.exceptions import AgentError, NotSerializable, SecretKeyMissing, StaleEpoch, Suspend
from workers.interaction import (
    AnswerValue,
    Context,
    ContextChange,
    Decision,
    OnExpiry,
    QuestionExpired,
    Request,
    answers_to_values,
)
from workers.interaction.approval import approval_request, decision_of
from workers.interaction.context import as_given, canonical, changes, digest
from workers.interaction.forms import form_request, form_result
from workers.logs import Log
from workers.runtime import ask_group
from workers.runtime.attempts import AttemptWalk
from workers.runtime.host import Host, QuestionProgress
from workers.runtime.lease import LeaseKeeper
from workers.runtime.plan import PlanSteps
from workers.runtime.wiring import Runtime
from workers.store import ids
from workers.store import journal_names as names
from workers.store.records import InterruptRecord, InterruptState, RunRecord
from workers.store.runs import history_entry

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
log = Log("parley.run")


class Run(PlanSteps):
    """One execution of one run, bound to the epoch its worker claimed."""

    def __init__(
        self,
        runtime: Runtime,
        record: RunRecord,
        epoch: int,
        host: Host,
        keeper: LeaseKeeper,
        journal: dict[str, Any] | None = None,
        interrupts: dict[str, InterruptRecord | None] | None = None,
    ) -> None:
        self._rt = runtime
        self._record = record
        self._epoch = epoch
        self._host = host
        self._keeper = keeper
        self.retried_writes = 0  # store calls that met a Redis outage and were tried again
        self.progressed = False  # this execution recorded a step
        self._asks = 0
        self._says = 0
        self._key_calls: dict[str, int] = {}
        self._interrupt: InterruptRecord | None = None
        self._opened_earlier = False  # the current question was opened by an earlier execution
        self._journal: dict[str, Any] | None = journal  # read with the claim, or on first use
        self._interrupts: dict[str, InterruptRecord | None] = dict(interrupts or {})  # read with the claim
        self._ending: dict[str, Any] = {}  # journal entries the run's ending transition records (see `once`)
        self._pending: dict[str, Any] = {}  # entries left for the next write: repeatable effects' "done"
        self._changed: dict[str, bool] = {}  # keys whose last answer follows one voided by changed facts
        self._secrets: dict[str, str] = {}  # secret answers by item id, for this execution only (never recorded)
        self._answered: dict[str, InterruptRecord] = {}  # the question whose answers `ask` of a key last returned
        self.log = log.bind(**record.log_context())

    def _recorded(self, field: str) -> Any:
        """A journal entry; the whole journal is read once per execution, since only this
        execution (fenced by its epoch) writes to it while it runs."""
        if self._journal is None:
            self._journal = self.read(lambda: self._rt.store.journal(self.run_id), "read the journal")
        return self._journal.get(field)

    def read_interrupt(self, iid: str) -> InterruptRecord | None:
        """An interrupt, read once per execution: nothing else changes it while this execution owns the run."""
        if iid not in self._interrupts:
            self._interrupts[iid] = self.read(lambda: self._rt.store.interrupt(iid), "read a question")
        return self._interrupts[iid]

    def durable(self, call: Callable[[], T], what: str, *, carries_pending: bool = False) -> T:
        """Write through the store, riding out a Redis outage while this worker's lease holds (see `lease`).

        Journal entries left for the next write (`once(..., repeatable=True)`) are written first,
        unless `call` records them itself (`carries_pending`, with `ending_journal()`), so every
        later write of this execution lands after them, as it would had they been written at once.
        """
        if self._pending and not carries_pending:
            self._flush_pending()
        return self.read(call, what)

    def read(self, call: Callable[[], T], what: str) -> T:
        """Read through the store, riding out a Redis outage as `durable` does; a read needs none
        of the entries left for the next write written before it."""
        first = True

        def attempt() -> T:
            nonlocal first
            if not first:
                self.retried_writes += 1
            first = False
            return call()

        return self._keeper.durable(attempt, what)

    def _write(self, field: str, value: Any) -> None:
        """Journal `value` under `field`, and with it the entries left for the next write."""
        also = dict(self._pending)
        self.durable(
            lambda: self._rt.store.record(self.run_id, self._epoch, field, value, also=also),
            f"record {field}",
            carries_pending=True,
        )
        self._written({**also, field: value})

    def _flush_pending(self) -> None:
        """Write the entries left for the next write on their own, before a call that cannot carry them."""
        self._write(*next(iter(self._pending.items())))  # `_write` carries the rest with it

    def _written(self, entries: dict[str, Any]) -> None:
        for name in entries:
            self._pending.pop(name, None)
        if self._journal is not None:
            self._journal.update(entries)

    # ---- RunView: what a host may know --------------------------------------
    @property
    def run_id(self) -> str:
        return self._record.id

    @property
    def started_by(self) -> str:
        return self._record.started_by

    @property
    def conversation(self) -> dict[str, Any]:
        return self._record.conversation

    @property
    def interrupt_id(self) -> str | None:
        return self._interrupt.id if self._interrupt else None

    @property
    def interrupt(self) -> InterruptRecord | None:
        return self._interrupt

    @property
    def question_context(self) -> Context | None:
        return self._interrupt.context if self._interrupt else None

    @property
    def context_changes(self) -> list[ContextChange]:
        return list(self._interrupt.context_changes) if self._interrupt else []

    @property
    def question_message(self) -> dict[str, Any]:
        """Where the current question was posted before, if it was; a host posts it only once."""
        return self._interrupt.message if self._interrupt else {}

    @property
    def question_may_be_posted(self) -> bool:
        """True when an earlier execution opened the current question and no message is recorded
        for it: that execution may have died inside the post, after the message was made."""
        return self._opened_earlier and not self.question_message.get("ts")

    def record_question_message(self, message: dict[str, Any], *, parked_next: bool = False) -> None:
        """Record where the question was posted, so it is never posted twice. With `parked_next` the
        park that follows records it: a crash before then leaves the question recorded without a
        `ts`, and the replay finds the message by its metadata (`question_may_be_posted`)."""
        if self._interrupt is not None:
            iid = self._interrupt.id
            if not parked_next:
                self.durable(lambda: self._rt.store.set_message(iid, message), "record where the question was posted")
            self._interrupt = self._interrupt.model_copy(update={"message": message})

    def record_assignees(
        self, assignees: list[str], groups: dict[str, list[str]], escalate_to: list[str] | None = None
    ) -> None:
        """Record who may answer the current question (user groups resolved), before it is posted."""
        if self._interrupt is not None:
            iid = self._interrupt.id
            team = str(self.conversation.get("team", ""))
            assignees = self.read(lambda: self._rt.store.away.stand_ins(team, assignees).people, "read who is away")
            self.durable(
                lambda: self._rt.store.people.resolve(iid, assignees, groups, escalate_to), "record who is asked"
            )
            update: dict[str, Any] = {"assignees": assignees, "groups": groups}
            if escalate_to is not None:
                update["escalate_to"] = escalate_to
            self._interrupt = self._interrupt.model_copy(update=update)

    @property
    def record(self) -> RunRecord:
        return self._record

    @property
    def data_dir(self) -> Path:
        """A directory for agents' local resources (trackers, logs), shared by the machine's workers."""
        self._rt.settings.data_dir.mkdir(parents=True, exist_ok=True)
        return self._rt.settings.data_dir

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def host(self) -> Host:
        return self._host

    # ---- the agent API ---------------------------------------------------------
    def step(self, key: str, fn: Callable[[], T]) -> T:
        """Run `fn` once per run and record its JSON result; a replay returns the record."""
        field = names.step(key)
        recorded = self._recorded(field)
        if recorded is not None:
            return recorded["v"]
        result = self._planned(key, fn)  # fn(), told to a host that draws the run's plan
        try:
            json.dumps(result)
        except (TypeError, ValueError) as exc:
            raise NotSerializable(f"step {key!r} returned a value that is not JSON: {exc}") from exc
        self._write(field, {"v": result})
        self.progressed = True
        self.log.info("step recorded", step=key)
        return result

    def history(self, event: str, **detail: Any) -> None:
        """Add an entry to the run's history (e.g. token usage), shown by `parley runs show`."""
        self.durable(lambda: self._rt.store.add_history(self.run_id, event, "agent", **detail), "add history")

    def say(self, text: str) -> None:
        """Post progress to the run's conversation, once: a replay posts nothing."""
        self._says += 1
        self.once(names.say(self._says), lambda: self._host.say(self._record, text))

    def once(self, name: str, effect: Callable[[], Any], *, ends_run: bool = False, repeatable: bool = False) -> None:
        """Perform a host side effect at most once per run (at least once across a crash mid-call).

        The fenced "intent" write before the effect stops a worker that lost the run from
        performing it. With `ends_run`, the effect is the last thing before the transition that
        ends this execution, and that transition records its "done" (`ending_journal`): a crash
        in between repeats the effect, exactly as a crash before a separate "done" write would.

        `repeatable` is for an effect whose repetition shows nothing new (a message replaced by
        the same content): its "done" goes with this execution's next write instead of a write
        of its own, so a crash before that write repeats the effect and nothing else. It writes
        no intent: a replay repeats such an effect whether or not one was recorded, and a worker
        that lost the run, performing it after the worker that took the run over, shows again
        what that one showed.
        """
        field = names.effect(name)
        if self._recorded(field) == "done" or field in self._ending or field in self._pending:
            return
        if not repeatable:
            self._write(field, "intent")
        effect()
        if ends_run:
            self._ending[field] = "done"
        elif repeatable:
            self._pending[field] = "done"
        else:
            self._write(field, "done")

    def ending_journal(self) -> dict[str, Any]:
        """What the transition that ends this execution records in the journal with it (see `once`):
        the ending effects' "done", and the entries left for the next write. Pass the transition
        to `durable` with `carries_pending=True`."""
        return {**self._pending, **self._ending}

    def ask(self, request: Request, key: str | None = None, context: Context | None = None) -> dict[str, AnswerValue]:
        """Put `request` to people and return their answers by item id.

        The first time, the run parks until someone answers. On replay the recorded
        answers are returned. Asking the same `key` again (an unusable answer) opens
        a new attempt; the fourth attempt fails the run.

        `context` is the JSON-able facts the person decides on (at most 2,000 characters
        of canonical JSON, else `ContextError` before anything is recorded). It is shown
        with the question and recorded with the answer; on replay, an answer given on
        other facts than `context` now is void for this run, and the question is asked
        again as the key's next attempt, showing what changed.

        A secret item's value is returned here (and by `secret`) and nowhere else: it is
        sealed at rest under `PARLEY_SECRET_KEY` until the run ends. Without the key, a
        request with a secret item fails the run (`SecretKeyMissing`) before anything is recorded.
        """
        if request.has_secret and self._rt.store.box is None:
            raise SecretKeyMissing()
        bound = canonical(context) if context is not None else ""  # refused here, before anything is recorded
        shown = as_given(context) if context is not None else ""
        facts: Context | None = json.loads(shown) if shown else None
        self._asks += 1
        key = key or f"#{self._asks}"
        walk = AttemptWalk(self, key)
        for n, iid in walk:
            interrupt = self.read_interrupt(iid)
            if interrupt is None:
                raise walk.missing(n)
            if interrupt.state is InterruptState.ANSWERED:
                if walk.void(interrupt, bound, facts):
                    continue
                values = self._with_secrets(interrupt)
                if values is None:
                    continue  # its secrets were deleted when the run ended once; ask again
                self._answered[key] = interrupt
                return values
            if interrupt.state is InterruptState.EXPIRED:
                if interrupt.request.on_expiry is OnExpiry.USE_DEFAULTS:
                    return answers_to_values(interrupt.request, interrupt.answers)
                raise QuestionExpired(key, interrupt.expires_at)
            if interrupt.state is InterruptState.CANCELLED:
                raise StaleEpoch(self.run_id, self._epoch)
            return self._solicit(interrupt, opened_earlier=True)
        anyone = self.conversation.get("anyone") or request.claim  # open to the whole channel; a claim picks one
        if not request.assignees and not anyone:
            request = request.model_copy(update={"assignees": [self.started_by]})
        attempts, voided = [*walk.attempts, ids.new_question_id()], walk.voided
        assignees = list(request.assignees)
        opened = self.durable(
            lambda: self._rt.store.open_interrupt(
                self.record, self._epoch, key, attempts, request, assignees, context=shown, changes=voided
            ),
            "open a question",
        )
        if self._journal is not None:
            self._journal[names.ask(key)] = attempts
        metrics.QUESTIONS_ASKED.inc()
        return self._solicit(opened, opened_earlier=False)

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
        """Ask a person to approve `action` with `args`: they approve, edit the editable args first, or reject.

        The approval is bound to `args` as `ask`'s `context` binds an answer: proposed args that
        differ on replay void it, and it is asked again showing old → new. An edited approval is
        bound to the edited args too, so an agent that proposes what was approved is not asked again.
        `schema` (JSON Schema or a pydantic model) types the editable args; without it their types
        are inferred from the values.
        """
        request = approval_request(action, args, schema=schema, editable=editable, **request_options)
        key = key or f"#{self._asks + 1}"  # the key `ask` would give it
        values = self.ask(request, key=key, context=args)
        answered = self._answered.get(key)
        decision = decision_of(
            answered.request if answered else request, values, answered.answered_by if answered else ""
        )
        if decision.edited and answered is not None:
            fields = [c[0] for c in decision.changes]
            self.once(
                names.edits(answered.id),
                lambda: self._rt.store.add_history(
                    self.run_id, "approved with edits", decision.by, interrupt_id=answered.id, key=key, fields=fields
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
        """Ask for `model`'s fields (one item each, see `workers.interaction.forms`) and return the instance.

        The model's own validators run where the answers are accepted: their errors are the
        form's, and nothing is accepted. A field no item can ask for is refused here, before
        anything is recorded or posted (`FormError`, naming the field).
        """
        request = form_request(model, reason, **request_options)
        return form_result(model, self.ask(request, key=key, context=context))

    def ask_all(
        self, requests: dict[str, Request], context: dict[str, Context] | None = None
    ) -> dict[str, dict[str, AnswerValue]]:
        """Put every request at once (each its own message and assignees); return each one's answers by its key.

        The run parks until all are answered and resumes once, after the last answer; each question
        is locked as soon as it is answered, and expires by its own `on_expiry`. The keys are ask
        keys: asking one again opens its next attempt, within the same limit. `context` maps a key
        to the facts that question's answer is bound to, as for `ask`.
        """
        return ask_group.ask_all(self, requests, context)

    def ask_any(
        self, requests: dict[str, Request], context: dict[str, Context] | None = None
    ) -> tuple[str, dict[str, AnswerValue]]:
        """Put every request at once; resume on the first answer and return `(its key, its answers)`.

        The other questions close as "no longer needed"; a late answer to one is refused with that reason.
        """
        return ask_group.ask_any(self, requests, context)

    def ask_each(
        self,
        request: Request,
        quorum: int | None = None,
        *,
        key: str | None = None,
        context: Context | None = None,
    ) -> dict[str, dict[str, AnswerValue]]:
        """Put `request` to each assignee separately; return each person's own answers by user id.

        One message, with progress ("2 of 3 answered: @A, @B"; what they answered too when
        `request.show_answers`); each person answers once, for themselves. The run resumes when
        `quorum` people answered (default: everyone), and the others' answers are no longer needed.
        """
        return ask_group.ask_each(self, request, quorum, key=key, context=context)

    @property
    def question_progress(self) -> QuestionProgress | None:
        """A single question has no per-person progress (see `ask_each`)."""
        return None

    @property
    def asked_separately(self) -> list[InterruptRecord]:
        return []

    def secret(self, item_id: str) -> str:
        """The value of the secret item `item_id` as last answered in this execution (see `ask`).

        For code that needs a secret the model only saw a placeholder of (`workers.llm`): a
        tool reads it here. `AgentError` when no secret answer to `item_id` was returned yet.
        """
        if item_id not in self._secrets:
            raise AgentError(f"no secret answer to {item_id!r} in this run yet; ask it with run.ask first")
        return self._secrets[item_id]

    def _with_secrets(self, interrupt: InterruptRecord) -> dict[str, AnswerValue] | None:
        """An answered question's values, its secrets opened; None when its secrets are no longer held."""
        values = answers_to_values(interrupt.request, interrupt.answers)
        if not any(a.is_secret for a in interrupt.answers):
            return values
        iid = interrupt.id
        opened = self.read(lambda: self._rt.store.secret_answers(self.run_id, iid), "read a secret answer")
        if opened is None:
            self.log.info("secret answer no longer held; asking again", key=interrupt.key)
            return None
        self._secrets.update(opened)
        return {**values, **{k: v for k, v in opened.items() if k in values}}

    def context_changed(self, key: str) -> bool:
        """True when the answer the last `ask` of `key` returned was asked again because the
        facts of the answer before it had changed (that answer was void); False otherwise,
        and before `ask` of `key` in this execution."""
        return self._changed.get(key, False)

    def _void_if_changed(
        self, interrupt: InterruptRecord, bound: str, facts: Context | None
    ) -> list[ContextChange] | None:
        """The changes that void `interrupt`'s answer (None when it stands), recorded once.

        An answer voided once stays void for this run, whatever the facts later become.
        The void is journalled with its history entry in one step; the host then marks
        the old question superseded, once.
        """
        field = names.void(interrupt.id)
        recorded = self._recorded(field)
        if recorded is None:
            if interrupt.context_digest == digest(bound) or self._bound_to_edits(interrupt, bound):
                return None
            found = changes(interrupt.context, facts)
            recorded = {"changes": [c.model_dump(mode="json") for c in found], "digest": digest(bound)}
            entry = history_entry(
                "context changed",
                interrupt_id=interrupt.id,
                key=interrupt.key,
                attempt=interrupt.attempt,
                fields=[c.field for c in found],
                old_digest=interrupt.context_digest,
                new_digest=digest(bound),
            )
            self.durable(
                lambda: self._rt.store.record(
                    self.run_id, self._epoch, field, recorded, only_if_absent=True, history=entry
                ),
                "record that an answer is void",
            )
            if self._journal is not None:
                self._journal[field] = recorded
            self.log.info("answer void: the facts changed", key=interrupt.key, fields=[c.field for c in found])
        voided = [ContextChange.model_validate(c) for c in recorded["changes"]]
        self.once(
            names.supersede(interrupt.id), lambda: self._host.question_superseded(self._record, interrupt, voided)
        )
        return voided

    @staticmethod
    def _bound_to_edits(interrupt: InterruptRecord, bound: str) -> bool:
        """Whether `bound` is the args an approval was given with its edits applied: an agent proposing
        what was approved does not change the facts."""
        if interrupt.request.approval is None or not bound:
            return False
        values = answers_to_values(interrupt.request, interrupt.answers)
        approved = decision_of(interrupt.request, values)
        return approved.edited and canonical(approved.args) == bound

    def _solicit(self, interrupt: InterruptRecord, *, opened_earlier: bool) -> dict[str, AnswerValue]:
        self._interrupt = interrupt
        self._opened_earlier = opened_earlier
        self.log = self.log.bind(interrupt_id=interrupt.id)
        outcome = self._host.solicit(interrupt.request, self)
        if not outcome.paused:
            answers = interrupt.request.validate_answers(outcome.answers)
            self.durable(
                lambda: self._rt.store.close_synchronously(interrupt, answers, by=self.started_by, epoch=self._epoch),
                "record the answers",
            )
            self._secrets.update({a.id: a.secret for a in answers if a.secret is not None})
            self._answered[interrupt.key] = interrupt.model_copy(
                update={"answers": answers, "answered_by": self.started_by}
            )
            return answers_to_values(interrupt.request, answers)
        parked = self._interrupt
        self.durable(lambda: self._rt.store.park(self.run_id, self._epoch, parked), "park")
        self.log.info("paused", key=interrupt.key, attempt=interrupt.attempt, assignees=interrupt.assignees)
        raise Suspend(self.run_id, interrupt.id)

    def recorded(self, key: str) -> Any:
        """What step `key` recorded, or `ABSENT` before it has run: a read that runs and records nothing."""
        entry = self._recorded(names.step(key))
        return ABSENT if entry is None else entry["v"]
