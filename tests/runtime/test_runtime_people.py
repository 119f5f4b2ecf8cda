"""Escalation and reassignment in the runtime and the store, on real Redis and RQ, with a recording host.

Each change of who may answer is one script: it writes everything (the assignees, the waiting
index, the history entry) or, refused, nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from redis import Redis
from runtime_helpers import dump_database, history_events, parked, runtime_and_host, start, work

from workers.interaction import Answer
from workers.runtime.acceptance import AcceptRefused, accept
from workers.runtime.people import ReassignRefused, reassign
from workers.runtime.sweep import sweep
from workers.runtime.wiring import Runtime
from workers.store import keys
from workers.store.records import InterruptRecord, RefusalReason, RunStatus

pytestmark = pytest.mark.integration

RED = [Answer(id="colour", choice="red")]


def test_the_sweep_escalates_once_and_the_escalation_person_may_answer_only_then(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"assignees": ["U1"], "escalate_after": 30, "escalate_to": ["U2", "U1"]})
    with pytest.raises(AcceptRefused) as refused:
        accept(rt, iid, "U2", RED)
    assert refused.value.reason is RefusalReason.NOT_ALLOWED
    assert sweep(rt, now=time.time() + 10).escalated == []
    assert sweep(rt, now=time.time() + 31).escalated == [iid]
    assert sweep(rt, now=time.time() + 62).escalated == []
    assert host.escalations == [(run_id, iid, ["U2"])]  # U1 was asked already
    q = rt.store.interrupt(iid)
    assert q is not None and q.assignees == ["U1", "U2"] and q.escalated_at
    assert rt.store.waiting_on("U2") == [iid]
    [entry] = history_events(rt, run_id, "escalated")
    assert (entry.by, entry.detail["to"], entry.detail["key"]) == ("parley", ["U2", "U1"], q.key)
    accept(rt, iid, "U2", RED)
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED


def test_reminders_keep_working_beside_escalation(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(
        rt, "t-ask", {"assignees": ["U1"], "expires_in": 100, "escalate_after": 20, "escalate_to": ["U2"]}
    )
    report = sweep(rt, now=time.time() + 21)
    assert (report.escalated, report.reminded) == ([iid], [])
    report = sweep(rt, now=time.time() + 51)
    assert (report.escalated, report.reminded) == ([], [iid])
    assert host.reminders == [(run_id, iid)] and len(host.escalations) == 1


def test_a_question_answered_before_its_escalation_is_never_escalated(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    _, iid = parked(rt, "t-ask", {"assignees": ["U1"], "escalate_after": 30, "escalate_to": ["U2"]})
    accept(rt, iid, "U1", RED)
    assert sweep(rt, now=time.time() + 31).escalated == []
    assert host.escalations == [] and r.zscore(keys.escalate_index(), iid) is None


def test_reassign_hands_over_the_assignees_place_and_refusals_write_nothing(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"assignees": ["U1", "U2"]})
    q = rt.store.interrupt(iid)
    assert q is not None
    before = dump_database(r)
    for by, to, admin, bot, words in [
        ("U1", "U1", False, False, "to yourself"),
        ("U1", "B1", False, True, "bot"),
        ("U3", "U4", False, False, "Only the people asked"),
        ("U1", "U2", False, False, "already asked"),
    ]:
        with pytest.raises(ReassignRefused, match=words):
            reassign(rt, q, by=by, to=to, is_admin=admin, to_is_bot=bot)
    assert dump_database(r) == before and host.reassignments == []

    moved = reassign(rt, q, by="U1", to="U3", is_admin=False, to_is_bot=False)
    assert host.reassignments == [(run_id, iid, "U1", "U3")]  # the run's own host is told
    assert moved.assignees == ["U2", "U3"] and moved.handoffs[0]["from"] == ["U1"]
    assert rt.store.waiting_on("U1") == [] and rt.store.waiting_on("U3") == [iid]
    with pytest.raises(AcceptRefused):
        accept(rt, iid, "U1", RED)
    whole = reassign(rt, moved, by="UADMIN", to="U5", is_admin=True, to_is_bot=False)
    assert whole.assignees == ["U5"] and rt.store.waiting_on("U2") == []
    assert [(h.by, h.detail["from"], h.detail["to"]) for h in history_events(rt, run_id, "reassigned")] == [
        ("U1", ["U1"], "U3"),
        ("UADMIN", ["U2", "U3"], "U5"),
    ]
    accept(rt, iid, "U5", RED)
    with pytest.raises(ReassignRefused, match="already answered"):
        reassign(rt, whole, by="U5", to="U6", is_admin=False, to_is_bot=False)


def test_a_question_is_not_reassigned_to_someone_away_but_their_delegate_is_named(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask", {"assignees": ["U1"]})
    q = rt.store.interrupt(iid)
    assert q is not None
    rt.store.away.set("T1", "U3", time.time() + 3600, "U4", by="U3")
    before = dump_database(r)
    with pytest.raises(ReassignRefused, match=r"<@U3> is away; reassign it to <@U4>, who answers for them"):
        reassign(rt, q, by="U1", to="U3", is_admin=False, to_is_bot=False)
    assert dump_database(r) == before and host.reassignments == []
    rt.store.away.set("T1", "U5", time.time() + 3600, "U1", by="U5")
    with pytest.raises(ReassignRefused, match=r"<@U5> is away, and <@U1>, who answers for them, is already asked"):
        reassign(rt, q, by="U1", to="U5", is_admin=False, to_is_bot=False)
    moved = reassign(rt, q, by="U1", to="U4", is_admin=False, to_is_bot=False)
    assert moved.assignees == ["U4"] and host.reassignments == [(run_id, iid, "U1", "U4")]


def test_first_notice_is_once_per_person_per_question_and_never_creates_a_question(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    _, iid = parked(rt, "t-ask", {"assignees": ["U1"]})
    people = rt.store.people
    assert people.first_notice(iid, "U1") and not people.first_notice(iid, "U1")
    assert people.first_notice(iid, "U2")
    assert not people.first_notice("qNoSuchQuestion", "U1") and not r.exists(keys.interrupt("qNoSuchQuestion"))


def test_each_question_of_an_ask_all_escalates_on_its_own(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-all-escalate")
    work(rt)
    by_key = {}
    for iid in r.zrange(keys.escalate_index(), 0, -1):
        q = rt.store.interrupt(iid.decode())
        assert q is not None
        by_key[q.key] = q.id
    assert list(by_key) == ["b"]  # only the question that asks for it
    assert sweep(rt, now=time.time() + 31).escalated == [by_key["b"]]
    assert host.escalations == [(run_id, by_key["b"], ["U9"])]
    accept(rt, by_key["b"], "U9", RED)
    assert rt.store.get(run_id).status is RunStatus.PAUSED  # still waiting on the other question


def _members(rt: Runtime, run_id: str) -> list[InterruptRecord]:
    group = rt.store.groups.group(rt.store.get(run_id).interrupt)
    assert group is not None
    return rt.store.groups.members(group)


def test_ask_each_names_whom_a_delegate_answers_for(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    rt.store.away.set("T1", "U1", time.time() + 3600, "U2", by="U1")
    (tmp_path / "facts.json").write_text('{"version": "1"}')
    run_id = start(rt, "t-each-facts", {"assignees": ["U1", "U3"]})
    work(rt)
    [(u2, stands_in), (u3, nobody)] = [(m.assignees, m.standing_in) for m in _members(rt, run_id)]
    assert (u2, u3) == (["U2"], ["U3"])
    assert [entry["user"] for entry in stands_in["U2"]] == ["U1"] and nobody == {}


def test_ask_each_asked_again_on_new_facts_asks_each_person_once(r: Redis, tmp_path: Path) -> None:
    """Someone goes away naming another person asked as delegate: that person still holds one question."""
    rt, _ = runtime_and_host(r, tmp_path)
    (tmp_path / "facts.json").write_text('{"version": "1"}')
    run_id = start(rt, "t-each-facts", {"assignees": ["U1", "U2"]})
    work(rt)
    for member in _members(rt, run_id):
        accept(rt, member.id, member.assignees[0], RED)
    (tmp_path / "facts.json").write_text('{"version": "2"}')  # the answers are void: asked again
    rt.store.away.set("T1", "U1", time.time() + 3600, "U2", by="U1")
    work(rt)

    again = _members(rt, run_id)
    assert [m.assignees for m in again] == [["U1"], ["U2"]]
    for member in again:
        accept(rt, member.id, member.assignees[0], RED)
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED and rt.store.get(run_id).result == "U1=red U2=red"
