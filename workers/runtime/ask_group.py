"""`run.ask_all`, `run.ask_any`, `run.ask_each`: several questions at once, one park, one resume.

Every question is an ordinary interrupt (its own message, assignees, expiry and attempts
of its ask key) and a member of a group (`workers.store.groups`) the run parks on. The
store resumes the run once, when the group is complete: every member answered (`all`),
the first (`any`), or `need` people's own answers (`each`). Replay walks each key's
attempts as `run.ask` does, with the same limit, and the same void-on-changed-facts rule.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any

from workers import metrics
from workers.exceptions import AgentError, StaleEpoch, Suspend
from workers.interaction import AnswerValue, Context, ContextChange, OnExpiry, QuestionExpired, Request
from workers.interaction import answers_to_values as values_of
from workers.interaction.context import as_given, canonical
from workers.runtime.attempts import AttemptWalk, count_call
from workers.runtime.execution import Execution
from workers.runtime.group_close import progress_of
from workers.runtime.host import QuestionProgress
from workers.store import ids
from workers.store import journal_names as names
from workers.store.groups import GroupMode, GroupRecord, NewMember
from workers.store.records import GroupState, InterruptRecord, InterruptState, RunRecord
from workers.store.runs import interrupt_fields

MAX_AT_ONCE = 20
"""Questions one `ask_all`/`ask_any` may post, and people one `ask_each` may ask."""


@dataclass(frozen=True)
class _Spec:
    """One question of a call: its key, request and the facts its answer is bound to."""

    key: str
    request: Request
    bound: str = ""  # canonical JSON of the context
    shown: str = ""  # the context as given, for showing


class WalkState(StrEnum):
    """Where a key's attempts stand: answered (or expired with defaults), none open yet, one open,
    the last closed as no longer needed, or the last expired."""

    DONE = "done"
    NEW = "new"
    PENDING = "pending"
    DROPPED = "dropped"
    EXPIRED = "expired"


@dataclass
class _Walk:
    """Where a key's attempts stand in this execution."""

    state: WalkState
    attempts: list[str] = field(default_factory=list)
    interrupt: InterruptRecord | None = None
    values: dict[str, AnswerValue] = field(default_factory=dict)
    voided: list[ContextChange] | None = None


def _specs(run: Execution, requests: Mapping[str, Request], context: Mapping[str, Context] | None) -> list[_Spec]:
    """Check a call's arguments before anything is recorded; a bad one fails the run with a clear error."""
    if not isinstance(requests, Mapping) or not requests:
        raise AgentError("ask_all/ask_any need a non-empty dict of ask key -> Request")
    if len(requests) > MAX_AT_ONCE:
        raise AgentError(f"at most {MAX_AT_ONCE} questions at once, got {len(requests)}")
    context = dict(context or {})
    unknown = sorted(set(context) - set(requests))
    if unknown:
        raise AgentError(f"context given for {unknown}, which no request has as its key")
    specs = []
    for key, request in requests.items():
        if not isinstance(key, str) or not key or len(key) > 200:
            raise AgentError(f"ask key {key!r} must be a non-empty string of at most 200 characters")
        if not isinstance(request, Request):
            raise AgentError(f"request {key!r} is a {type(request).__name__}, not a Request")
        _no_secret(request, key)
        facts = context.get(key)
        bound = canonical(facts) if facts is not None else ""  # ContextError here, before anything is recorded
        specs.append(_Spec(key, _with_assignees(run, request), bound, as_given(facts) if facts is not None else ""))
    return specs


def _with_assignees(run: Execution, request: Request) -> Request:
    return request if request.assignees else request.model_copy(update={"assignees": [run.started_by]})


def _facts(spec: _Spec) -> Context | None:
    return json.loads(spec.shown) if spec.shown else None


def _walk(run: Execution, spec: _Spec) -> _Walk:
    """Follow `spec.key`'s attempts as `run.ask` does: a void answer moves on to the next attempt."""
    walk = AttemptWalk(run, spec.key)
    attempts = walk.attempts
    for n, iid in walk:
        interrupt = run.read_interrupt(iid)
        if interrupt is None:
            raise walk.missing(n)
        state = interrupt.state
        if state is InterruptState.ANSWERED:
            if walk.void(interrupt, spec.bound, _facts(spec)):
                continue
            return _Walk(WalkState.DONE, attempts, interrupt, values_of(interrupt.request, interrupt.answers))
        if state is InterruptState.EXPIRED:
            if interrupt.request.on_expiry is OnExpiry.USE_DEFAULTS:
                return _Walk(WalkState.DONE, attempts, interrupt, values_of(interrupt.request, interrupt.answers))
            return _Walk(WalkState.EXPIRED, attempts, interrupt)
        if state is InterruptState.CANCELLED:
            raise StaleEpoch(run.run_id, run.epoch)
        if state is InterruptState.NOT_NEEDED:
            if len(attempts) > n:  # asked again in a later group (an `ask_any` whose winner was void)
                continue
            return _Walk(WalkState.DROPPED, attempts, interrupt)
        return _Walk(WalkState.PENDING, attempts, interrupt)
    return _Walk(WalkState.NEW, attempts, voided=walk.voided)


def ask_all(
    run: Execution, requests: Mapping[str, Request], context: Mapping[str, Context] | None = None
) -> dict[str, dict[str, AnswerValue]]:
    specs = _specs(run, requests, context)
    walks = {s.key: _walk(run, s) for s in specs}
    for key, w in walks.items():
        if w.state is WalkState.EXPIRED:
            raise QuestionExpired(key, w.interrupt.expires_at if w.interrupt else None)
    answered = {k: w.values for k, w in walks.items() if w.state is WalkState.DONE}
    if len(answered) == len(specs):
        return answered
    pending = next((w.interrupt for w in walks.values() if w.state is WalkState.PENDING and w.interrupt), None)
    if pending is not None:  # an earlier execution opened these and stopped before parking
        answered.update(_wait(run, pending.group, GroupMode.ALL))
    todo = [s for s in specs if s.key not in answered and walks[s.key].state in (WalkState.NEW, WalkState.DROPPED)]
    if todo:
        answered.update(_open_and_wait(run, GroupMode.ALL, len(todo), [(s, walks[s.key]) for s in todo]))
    return {s.key: answered[s.key] for s in specs}  # in the order the agent gave


def ask_any(
    run: Execution, requests: Mapping[str, Request], context: Mapping[str, Context] | None = None
) -> tuple[str, dict[str, AnswerValue]]:
    specs = _specs(run, requests, context)
    walks = {s.key: _walk(run, s) for s in specs}
    done = [(_closed_at(w.interrupt), k) for k, w in walks.items() if w.state is WalkState.DONE and w.interrupt]
    if done:
        key = min(done)[1]
        return key, walks[key].values
    for key, w in walks.items():
        if w.state is WalkState.EXPIRED:
            raise QuestionExpired(key, w.interrupt.expires_at if w.interrupt else None)
    pending = next((w.interrupt for w in walks.values() if w.state is WalkState.PENDING and w.interrupt), None)
    if pending is not None:
        got = _wait(run, pending.group, GroupMode.ANY)
    else:
        got = _open_and_wait(run, GroupMode.ANY, 1, [(s, walks[s.key]) for s in specs])
    key = next(iter(got))
    return key, got[key]


def _closed_at(interrupt: InterruptRecord) -> float:
    return interrupt.answered_at or interrupt.expires_at or interrupt.asked_at


def _open_and_wait(
    run: Execution, mode: GroupMode, need: int, todo: list[tuple[_Spec, _Walk]]
) -> dict[str, dict[str, AnswerValue]]:
    """Open a group of new attempts of `todo`'s keys (a dropped attempt counts as one asked), then wait on it."""
    members: list[NewMember] = []
    gid = ids.new_group_id()
    for spec, w in todo:
        if w.state is WalkState.DROPPED:
            count_call(run, spec.key)
        attempts = [*w.attempts, ids.new_question_id()]
        fields = _fields(run, spec.key, attempts, spec.request, spec.shown, w.voided)
        members.append(NewMember(fields, names.ask(spec.key), attempts))
    store = run._rt.store
    opened = run.durable(lambda: store.groups.open(run.record, run.epoch, gid, mode, need, members), "open questions")
    metrics.QUESTIONS_ASKED.inc(len(opened[1]))
    if run._journal is not None:
        for m in members:
            run._journal[m.journal_field] = m.attempts
    return _wait(run, gid, mode, opened_earlier=False, opened=opened)


def _fields(
    run: Execution, key: str, attempts: list[str], request: Request, shown: str, voided: list[ContextChange] | None
) -> dict[str, str]:
    record = run.record
    team, now = str(record.conversation.get("team", "")), time.time()
    asked = run._rt.store.away.stand_ins(team, list(request.assignees), now)  # delegates of people away
    fields = interrupt_fields(
        attempts[-1],
        record.id,
        team,
        key,
        len(attempts),
        request,
        asked.people,
        now,
        context=shown,
        changes=voided,
        standing_in=asked.standing_in,
    )
    if record.conversation.get("enterprise"):
        fields["enterprise"] = str(record.conversation["enterprise"])
    return fields


def _wait(
    run: Execution,
    gid: str,
    mode: GroupMode,
    *,
    opened_earlier: bool = True,
    opened: tuple[GroupRecord, list[InterruptRecord]] | None = None,
) -> dict[str, dict[str, AnswerValue]]:
    """Put every open member of group `gid` to people; return the answers a synchronous host gave
    when they complete the group, else park the run on the group. `opened`: the group and members
    this execution just opened, so they need not be read back."""
    store = run._rt.store
    if opened is not None:
        members = opened[1]
    else:
        group = run.read(lambda: store.groups.group(gid), "read questions")
        if group is None:
            raise AgentError(f"the questions {gid!r} are missing from the store")
        members = run.read(lambda: store.groups.members(group), "read questions")
    got: dict[str, dict[str, AnswerValue]] = {}
    for m in members:
        if m.state not in (InterruptState.POSTING, InterruptState.OPEN):
            continue
        run._interrupt, run._opened_earlier = m, opened_earlier
        outcome = run.host.solicit(m.request, run)
        if outcome.paused:
            _keep_message(run, m)
            continue
        answers = m.request.validate_answers(outcome.answers)
        run.durable(
            partial(store.close_synchronously, m, answers, by=run.started_by, epoch=run.epoch),
            "record the answers",
        )
        got[m.key] = values_of(m.request, answers)
        if mode is GroupMode.ANY:  # a synchronous host's first answer wins; the rest were never put to anyone
            _drop_rest(run, members, m)
            return got
    open_now = [m for m in members if m.state in (InterruptState.POSTING, InterruptState.OPEN) and m.key not in got]
    if not open_now:
        return got
    run.durable(lambda: store.groups.park(run.run_id, run.epoch, gid), "park")
    run.log.info("paused on questions", group=gid, mode=mode.value, questions=[m.id for m in open_now])
    raise Suspend(run.run_id, gid)


def _keep_message(run: Execution, member: InterruptRecord) -> None:
    """Record where the host posted `member`. A host may leave that to the park that follows
    (`record_question_message(parked_next=True)`), but a group's park records no member's message:
    without this, a question asked of the run's starter alone would never be locked once answered."""
    posted = run.interrupt.message if run.interrupt is not None else {}
    if posted.get("ts") and posted != member.message:
        run.durable(partial(run._rt.store.set_message, member.id, posted), "record where the question was posted")


def _drop_rest(run: Execution, members: list[InterruptRecord], winner: InterruptRecord) -> None:
    store = run._rt.store
    for m in members:
        if m.id != winner.id and m.state in (InterruptState.POSTING, InterruptState.OPEN):
            run.durable(partial(store.groups.drop_synchronously, m), "close a question no longer needed")
            detail = {"interrupt_id": m.id, "key": m.key, "attempt": m.attempt}
            run.durable(partial(store.add_history, run.run_id, "no longer needed", "parley", **detail), "history")


# ---- ask_each ------------------------------------------------------------------------------------
class _EachView:
    """What the host sees while `ask_each` puts its question: the run, with the shared message of the
    group as the question's, and how far the group is. A `PausingRun`."""

    def __init__(
        self, run: Execution, group: GroupRecord, members: list[InterruptRecord], opened_earlier: bool
    ) -> None:
        self._run, self._group, self._members, self._opened_earlier = run, group, members, opened_earlier
        self.answering = ""

    run_id = property(lambda self: self._run.run_id)
    started_by = property(lambda self: self._run.started_by)
    conversation = property(lambda self: self._run.conversation)
    record = property(lambda self: self._run.record)
    interrupt_id = property(lambda self: self._group.id)
    question_context = property(lambda self: self._members[0].context if self._members else None)
    context_changes = property(lambda self: list(self._members[0].context_changes) if self._members else [])
    question_message = property(lambda self: self._group.message)
    # The shared message stands for several questions, one per person (`asked_separately`): no single
    # question; user groups were resolved before the group opened (`_people`).
    interrupt = property(lambda self: None)

    @property
    def question_may_be_posted(self) -> bool:
        return self._opened_earlier and not self._group.message.get("ts")

    @property
    def question_progress(self) -> QuestionProgress:
        return progress_of(self._group, self._members, answering=self.answering)

    @property
    def asked_separately(self) -> list[InterruptRecord]:
        return list(self._members)

    def record_assignees(
        self, assignees: list[str], groups: dict[str, list[str]], escalate_to: list[str] | None = None
    ) -> None:
        """Never called: with no single `interrupt`, a host has no user groups left to resolve here."""
        raise TypeError("ask_each resolves user groups before its questions open")

    def record_question_message(self, message: dict[str, Any], *, parked_next: bool = False) -> None:
        # Written at once whatever `parked_next` says: the group's park does not record the message.
        gid = self._group.id
        self._run.durable(lambda: self._run._rt.store.groups.set_message(gid, message), "record where it was posted")
        self._group = self._group.model_copy(update={"message": message})


def ask_each(
    run: Execution,
    request: Request,
    quorum: int | None = None,
    *,
    key: str | None = None,
    context: Context | None = None,
) -> dict[str, dict[str, AnswerValue]]:
    if not isinstance(request, Request):
        raise AgentError(f"ask_each needs a Request, not a {type(request).__name__}")
    _no_secret(request, key or "ask_each")
    request = _with_assignees(run, request)
    run._asks += 1
    key = key or f"#{run._asks}"
    people = _people(run, key, list(request.assignees))
    if len(people) > MAX_AT_ONCE:
        raise AgentError(f"ask_each asks at most {MAX_AT_ONCE} people, got {len(people)}")
    need = len(people) if quorum is None else quorum
    if isinstance(need, bool) or not isinstance(need, int) or not 1 <= need <= len(people):
        raise AgentError(f"quorum must be a whole number from 1 to {len(people)} (the people asked), got {quorum!r}")
    # Someone away is asked through their delegate, once: a delegate asked anyway answers once,
    # so the quorum counts them once and can need no more people than are asked.
    people = _present(run, key, people)
    need = min(need, len(people))
    request = request.model_copy(update={"assignees": people})
    bound = canonical(context) if context is not None else ""
    shown = as_given(context) if context is not None else ""
    store = run._rt.store
    walk = AttemptWalk(run, key)
    for n, gid in walk:
        group = run.read(partial(store.groups.group, gid), "read questions")
        if group is None:
            raise walk.missing(n)
        if group.state is GroupState.CANCELLED:
            raise StaleEpoch(run.run_id, run.epoch)
        members = run.read(partial(store.groups.members, group), "read questions")
        if group.state is GroupState.OPEN:
            return _wait_each(run, group, members, opened_earlier=True)
        first = next((m for m in members if m.state is InterruptState.ANSWERED), None)
        if first is not None and walk.void(first, bound, json.loads(shown) if shown else None):
            continue
        return _each_answers(key, members)
    gid, voided = ids.new_group_id(), walk.voided
    attempts = [*walk.attempts, gid]
    news, owners = [], {}
    for person in people:
        iid = ids.new_question_id()
        mine = request.model_copy(update={"assignees": [person]})
        news.append(NewMember(_fields(run, key, [*attempts[:-1], iid], mine, shown, voided), "", []))  # found by group
        owners[person] = iid
    journal = {names.ask(key): attempts}
    group, members = run.durable(
        lambda: store.groups.open(
            run.record,
            run.epoch,
            gid,
            GroupMode.EACH,
            need,
            news,
            key=key,
            people=owners,
            journal=journal,
        ),
        "open questions",
    )
    if run._journal is not None:
        run._journal[names.ask(key)] = attempts
    return _wait_each(run, group, members, opened_earlier=False)


def _each_answers(key: str, members: list[InterruptRecord]) -> dict[str, dict[str, AnswerValue]]:
    got: dict[str, dict[str, AnswerValue]] = {}
    for m in members:
        if m.state is InterruptState.ANSWERED:
            got[m.answered_by] = values_of(m.request, m.answers)
        elif m.state is InterruptState.EXPIRED:
            if m.request.on_expiry is not OnExpiry.USE_DEFAULTS:
                raise QuestionExpired(key, m.expires_at)
            got[m.assignees[0]] = values_of(m.request, m.answers)
    return got


def _wait_each(
    run: Execution, group: GroupRecord, members: list[InterruptRecord], *, opened_earlier: bool
) -> dict[str, dict[str, AnswerValue]]:
    """Post the shared message once (a synchronous host asks each person in turn), then park."""
    store = run._rt.store
    view = _EachView(run, group, members, opened_earlier)
    request = members[0].request.model_copy(update={"assignees": list(group.people)})
    answered = sum(1 for m in members if m.state is InterruptState.ANSWERED)
    for i, m in enumerate(members):
        if m.state not in (InterruptState.POSTING, InterruptState.OPEN):
            continue
        view.answering = m.assignees[0]
        outcome = run.host.solicit(request, view)
        if outcome.paused:
            break
        answers = m.request.validate_answers(outcome.answers)
        person = m.assignees[0]
        run.durable(
            partial(store.close_synchronously, m, answers, by=person, epoch=run.epoch),
            "record the answers",
        )
        members[i] = m.model_copy(update={"state": InterruptState.ANSWERED, "answers": answers, "answered_by": person})
        view._members = members
        answered += 1
        if answered >= group.need:
            _drop_rest(run, members, m)
            return _each_answers(group.key, [x for x in members if x.state is InterruptState.ANSWERED])
    run.durable(lambda: store.groups.park(run.run_id, run.epoch, group.id), "park")
    run.log.info("paused on a question to each", group=group.id, people=list(group.people), need=group.need)
    raise Suspend(run.run_id, group.id)


def show_closed_group(run: Execution, record: RunRecord) -> None:
    """After the resume: lock every member of the group the run was parked on, once each."""
    store = run._rt.store
    gid = record.interrupt
    group = run.read(lambda: store.groups.group(gid), "read questions") if ids.is_group(gid) else None
    if group is None or group.state is GroupState.OPEN:
        return
    members = run.read(lambda: store.groups.members(group), "read questions")
    if group.mode is GroupMode.EACH:
        if group.message:
            progress = progress_of(group, members)
            run.once(names.lock(gid), lambda: run.host.group_progress(record, group, progress))
        return
    for m in members:  # a member a `show` job already locked is left as it is
        if m.message and m.state is not InterruptState.OPEN and not m.shown:
            run.once(names.lock(m.id), partial(run.host.question_closed, record, m))


def _no_secret(request: Request, key: str) -> None:
    """Secret items are sealed by `run.ask`'s acceptance path only; several questions at once
    would keep their answers in the clear, so they are refused before anything is recorded."""
    if request.has_secret:
        raise AgentError(f"question {key!r} has a secret item: ask secrets one at a time with run.ask")


def _present(run: Execution, key: str, people: list[str]) -> list[str]:
    """`people` with each one away replaced by their delegate, each once; journalled for replays."""
    team = str(run.record.conversation.get("team", ""))
    return list(run.step(names.people(key) + ":away", lambda: run._rt.store.away.stand_ins(team, people).people))


def _people(run: Execution, key: str, ids: list[str]) -> list[str]:
    """Each person `ask_each` asks: user groups (`S…`) resolved to their members by the host, once
    per run and journalled, so a replay asks the same people whoever joins or leaves the group."""
    if not any(i.startswith("S") for i in ids):
        return ids
    return list(run.step(names.people(key), lambda: run.host.people(run.record, ids)))
