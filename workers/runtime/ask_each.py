"""`run.ask_each`: one question to each person separately, one shared message, one park.

Each person gets a question of their own, a member of an `each` group. They answer once, for
themselves. The host shows one message with the group's progress (`host_view.EachView`). The
store resumes the run once, when `need` people answered. Replay walks the key's attempts as
`run.ask` does, each attempt being a group. The same void-on-changed-facts rule applies.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from workers.exceptions import AgentError, StaleEpoch
from workers.interaction import AnswerValue, Context, OnExpiry, QuestionExpired, Request
from workers.interaction import answers_to_values as values_of
from workers.interaction.context import as_given, canonical
from workers.runtime.ask_group import MAX_AT_ONCE, drop_rest, member_fields, no_secret, with_assignees
from workers.runtime.attempts import AttemptWalk
from workers.runtime.execution import Execution
from workers.runtime.host_view import EachView
from workers.store import ids
from workers.store import journal_names as names
from workers.store.away import StandIns
from workers.store.groups import GroupMode, GroupRecord, NewMember
from workers.store.records import GroupState, InterruptRecord, InterruptState


def ask_each(
    run: Execution,
    request: Request,
    quorum: int | None = None,
    *,
    key: str | None = None,
    context: Context | None = None,
) -> dict[str, dict[str, AnswerValue]]:
    run.not_parked()
    if not isinstance(request, Request):
        raise AgentError(f"ask_each needs a Request, not a {type(request).__name__}")
    no_secret(request, key or "ask_each")
    if request.escalate_after is not None:  # each person answers their own: nobody else can answer for them
        raise AgentError(
            "ask_each puts the question to each person on their own, so it cannot be escalated: "
            "leave out escalate_after (a reminder and a last call still go out), or use ask_all"
        )
    if request.claim:  # each person answers their own: nobody takes the question from the others
        raise AgentError(
            "ask_each puts the question to each person on their own, so it cannot be claimed: "
            "leave out claim, or ask one question with claim (run.ask, or a question of ask_any)"
        )
    request = with_assignees(run, request)
    key = run.keys.key(key)
    people = _people(run, key, list(request.assignees))
    if len(people) > MAX_AT_ONCE:
        raise AgentError(f"ask_each asks at most {MAX_AT_ONCE} people, got {len(people)}")
    need = len(people) if quorum is None else quorum
    if isinstance(need, bool) or not isinstance(need, int) or not 1 <= need <= len(people):
        raise AgentError(f"quorum must be a whole number from 1 to {len(people)} (the people asked), got {quorum!r}")
    # Someone away is asked through their delegate, once: a delegate asked anyway answers once,
    # so the quorum counts them once and can need no more people than are asked.
    people, standing_in = _present(run, key, people)
    need = min(need, len(people))
    request = request.model_copy(update={"assignees": people})
    bound = canonical(context) if context is not None else ""
    shown = as_given(context) if context is not None else ""
    store = run.store
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
        # Who stands in for whom was settled once for the key: a later attempt asks the same people.
        asked = StandIns([person], {person: standing_in[person]} if person in standing_in else {})
        fields = member_fields(run, key, [*attempts[:-1], iid], mine, shown, voided, asked)
        news.append(NewMember(fields, "", []))  # found by its group, not by the journal
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
    run.noted(journal)
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
    """Post the shared message once, then park.

    A synchronous host asks each person in turn.
    """
    store = run.store
    view = EachView(run, group, members, opened_earlier=opened_earlier)
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
        view.members = members
        answered += 1
        if answered >= group.need:
            drop_rest(run, members, m)
            return _each_answers(group.key, [x for x in members if x.state is InterruptState.ANSWERED])
    run.durable(lambda: store.groups.park(run.run_id, run.epoch, group.id), "park")
    run.log.info("paused on a question to each", group=group.id, people=list(group.people), need=group.need)
    run.suspend(group.id)


def _present(run: Execution, key: str, people: list[str]) -> tuple[list[str], dict[str, Any]]:
    """`people` with each absent one replaced by their delegate, each once, and whom each answers for.

    It is journalled for replays and for the key's later attempts.
    """
    team = str(run.record.conversation.get("team", ""))

    def read() -> dict[str, Any]:
        found = run.store.away.stand_ins(team, people)
        return {"people": found.people, "standing_in": found.standing_in}

    recorded = run.step(names.people(key) + ":away", read)
    if isinstance(recorded, list):  # recorded by an earlier version: the people alone
        return list(recorded), {}
    return list(recorded["people"]), dict(recorded["standing_in"])


def _people(run: Execution, key: str, ids: list[str]) -> list[str]:
    """Each person `ask_each` asks, with user groups (`S…`) resolved by the host.

    It is resolved once per run and journalled. So a replay asks the same people, whoever joins or
    leaves the group.
    """
    if not any(i.startswith("S") for i in ids):
        return ids
    return list(run.step(names.people(key), lambda: run.host.people(run.record, ids)))
