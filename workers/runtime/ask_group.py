"""`run.ask_all`, `run.ask_any`, `run.ask_each`: several questions at once, one park, one resume.

Every question is an ordinary interrupt, with its own message, assignees, expiry and attempts.
It is also a member of a group (`workers.store.groups`) the run parks on. The store resumes the
run once, when the group is complete. That is when every member answered (`all`), the first did
(`any`), or `need` people answered (`each`). Replay walks each key's attempts as `run.ask` does.
The same limit and void-on-changed-facts rule apply.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial

from workers import metrics
from workers.exceptions import AgentError, StaleEpoch
from workers.interaction import AnswerValue, Context, ContextChange, OnExpiry, QuestionExpired, Request
from workers.interaction import answers_to_values as values_of
from workers.interaction.context import as_given, canonical
from workers.runtime.attempts import AttemptWalk, count_call
from workers.runtime.execution import Execution
from workers.runtime.group_close import progress_of
from workers.runtime.host_view import HostView
from workers.store import ids
from workers.store import journal_names as names
from workers.store.away import StandIns
from workers.store.groups import GroupMode, GroupRecord, NewMember
from workers.store.records import GroupState, InterruptRecord, InterruptState, RunRecord
from workers.store.run_writes import interrupt_fields

MAX_AT_ONCE = 20
"""Questions one `ask_all`/`ask_any` may post, and people one `ask_each` may ask."""


@dataclass(frozen=True)
class _Spec:
    """One question of a call: its key, request and the facts bound to its answer."""

    key: str
    request: Request
    bound: str = ""  # canonical JSON of the context
    shown: str = ""  # the context as given, for showing


class WalkState(StrEnum):
    """Where a key's attempts stand.

    It is answered (or expired with defaults), none open yet, or one open. Or the last closed as no
    longer needed, or the last expired.
    """

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
    """Check a call's arguments before anything is recorded.

    A bad one fails the run with a clear error.
    """
    run.not_parked()
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
        no_secret(request, key)
        facts = context.get(key)
        bound = canonical(facts) if facts is not None else ""  # ContextError here, before anything is recorded
        specs.append(_Spec(key, with_assignees(run, request), bound, as_given(facts) if facts is not None else ""))
    return specs


def with_assignees(run: Execution, request: Request) -> Request:
    """The request as put, asked of the run's starter when it names nobody.

    A claim question naming nobody stays put to the whole channel, as with `run.ask`.
    """
    if request.assignees or request.claim:
        return request
    return request.model_copy(update={"assignees": [run.started_by]})


def _facts(spec: _Spec) -> Context | None:
    return json.loads(spec.shown) if spec.shown else None


def _walk(run: Execution, spec: _Spec) -> _Walk:
    """Follow `spec.key`'s attempts as `run.ask` does, past void answers.

    A void answer moves on to the next attempt.
    """
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
    """Open a group of new attempts of `todo`'s keys, then wait on it.

    A dropped attempt counts as one asked.
    """
    members: list[NewMember] = []
    gid = ids.new_group_id()
    for spec, w in todo:
        if w.state is WalkState.DROPPED:
            count_call(run, spec.key)
        attempts = [*w.attempts, ids.new_question_id()]
        fields = member_fields(run, spec.key, attempts, spec.request, spec.shown, w.voided)
        members.append(NewMember(fields, names.ask(spec.key), attempts))
    store = run.store
    opened = run.durable(lambda: store.groups.open(run.record, run.epoch, gid, mode, need, members), "open questions")
    metrics.QUESTIONS_ASKED.inc(len(opened[1]))
    run.noted({m.journal_field: m.attempts for m in members})
    return _wait(run, gid, mode, opened_earlier=False, opened=opened)


def member_fields(
    run: Execution,
    key: str,
    attempts: list[str],
    request: Request,
    shown: str,
    voided: list[ContextChange] | None,
    asked: StandIns | None = None,
) -> dict[str, str]:
    """The stored fields of a group's new question.

    It is attempt `attempts[-1]` of ask key `key`. Its assignees are `asked`, or their stand-ins now.
    """
    record = run.record
    team, now = str(record.conversation.get("team", "")), time.time()
    asked = asked or run.store.away.stand_ins(team, list(request.assignees), now)  # delegates of people away
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
    """Put every open member of group `gid` to people.

    Returns the answers a synchronous host gave, when they complete the group. Otherwise it parks
    the run on the group. `opened`: the group and members this execution just opened, so not read
    back.
    """
    store = run.store
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
        view = HostView(run, m, opened_earlier=opened_earlier)
        outcome = run.host.solicit(m.request, view)
        if outcome.paused:
            _keep_message(run, m, view)
            continue
        answers = m.request.validate_answers(outcome.answers)
        run.durable(
            partial(store.close_synchronously, m, answers, by=run.started_by, epoch=run.epoch),
            "record the answers",
        )
        got[m.key] = values_of(m.request, answers)
        if mode is GroupMode.ANY:  # a synchronous host's first answer wins; the rest were never put to anyone
            drop_rest(run, members, m)
            return got
    open_now = [m for m in members if m.state in (InterruptState.POSTING, InterruptState.OPEN) and m.key not in got]
    if not open_now:
        return got
    run.durable(lambda: store.groups.park(run.run_id, run.epoch, gid), "park")
    run.log.info("paused on questions", group=gid, mode=mode.value, questions=[m.id for m in open_now])
    run.suspend(gid)


def _keep_message(run: Execution, member: InterruptRecord, view: HostView) -> None:
    """Record where the host posted `member`, as `view` kept it.

    A host may leave that to the following park (`record_question_message(parked_next=True)`). But a
    group's park records no member's message. Without this, a question asked of the starter alone
    would never be locked once answered.
    """
    posted = view.interrupt.message
    if posted.get("ts") and posted != member.message:
        run.durable(partial(run.store.set_message, member.id, posted), "record where the question was posted")


def drop_rest(run: Execution, members: list[InterruptRecord], winner: InterruptRecord) -> None:
    """Close every open member but `winner` as no longer needed.

    Each gets a history entry.
    """
    store = run.store
    for m in members:
        if m.id != winner.id and m.state in (InterruptState.POSTING, InterruptState.OPEN):
            run.durable(partial(store.groups.drop_synchronously, m), "close a question no longer needed")
            detail = {"interrupt_id": m.id, "key": m.key, "attempt": m.attempt}
            run.durable(partial(store.add_history, run.run_id, "no longer needed", "parley", **detail), "history")


def show_closed_group(run: Execution, record: RunRecord) -> None:
    """After the resume, lock every member of the parked group, once each."""
    store = run.store
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


def no_secret(request: Request, key: str) -> None:
    """Refuse secret items before anything is recorded.

    Only `run.ask`'s acceptance path seals secret items. Several questions at once would keep their
    answers in the clear.
    """
    if request.has_secret:
        raise AgentError(f"question {key!r} has a secret item: ask secrets one at a time with run.ask")
