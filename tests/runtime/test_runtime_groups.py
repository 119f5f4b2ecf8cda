"""Several questions at once (`ask_all`, `ask_any`, `ask_each`) on real Redis and RQ, with a recording host.

The run parks once on its group, each answer closes its own question atomically, and the
run is resumed once, by the answer that completes the group.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from runtime_helpers import RecordingHost, history_events, make_runtime, paused, runtime_and_host, start, work

from bot.slack.blocks_inspect import inspect_view
from bot.slack.refusals import refusal_text
from workers import agent
from workers.interaction import Answer, Item, ItemType, Outcome, Request
from workers.registry import load_agents
from workers.runtime import admin
from workers.runtime.acceptance import AcceptRefused, accept, try_accept
from workers.runtime.host import PausingRun
from workers.runtime.queues import EXECUTE
from workers.runtime.run import execution_of
from workers.runtime.sweep import sweep
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.records import InterruptState, RefusalReason, RunStatus

pytestmark = pytest.mark.integration

EXECUTIONS: dict[str, int] = {}


def _yes_no(reason: str, who: list[str], **extra: Any) -> Request:
    item = Item(id="ok", text="OK?", type=ItemType.SELECT, options=["yes", "no"])
    return Request(reason=reason, items=[item], assignees=who, **extra)


def _all(run: Any, text: str) -> str:
    EXECUTIONS[run.run_id] = EXECUTIONS.get(run.run_id, 0) + 1
    p = json.loads(text)
    got = run.ask_all(
        # the deadline only on the first execution, so a retried run's new attempt has none
        {
            "a": _yes_no("A?", ["UA"], expires_in=p.get("expires_in") if execution_of(run).epoch == 1 else None),
            "b": _yes_no("B?", ["UB"]),
        },
        context=p.get("context"),
    )
    return f"a={got['a']['ok']} b={got['b']['ok']}"


def _any(run: Any, text: str) -> str:
    key, got = run.ask_any({"a": _yes_no("A?", ["UA"]), "b": _yes_no("B?", ["UB"])})
    return f"{key}={got['ok']}"


def _each(run: Any, text: str) -> str:
    EXECUTIONS[run.run_id] = EXECUTIONS.get(run.run_id, 0) + 1
    p = json.loads(text)
    got = run.ask_each(_yes_no("Approve?", ["UA", "UB", "UC"]), quorum=p.get("quorum"))
    return ",".join(f"{u}={v['ok']}" for u, v in sorted(got.items()))


agent("t-group-all")(_all)
agent("t-group-any")(_any)
agent("t-group-each")(_each)


@agent("t-group-shared")
def _shared(run: Any, text: str) -> str:
    got = run.ask_all({"a": _yes_no("A?", ["UA", "UB"]), "b": _yes_no("B?", ["UC"])})
    return f"a={got['a']['ok']} b={got['b']['ok']}"


@agent("t-group-each-team")
def _each_team(run: Any, text: str) -> str:
    got = run.ask_each(_yes_no("Approve?", ["S0REVIEW", "UD"]), quorum=2)
    return ",".join(f"{u}={v['ok']}" for u, v in sorted(got.items()))


def _members(rt: Runtime, run_id: str) -> dict[str, Any]:
    group = rt.store.groups.group(paused(rt, run_id))
    assert group is not None
    return {m.key if group.mode.value != "each" else m.assignees[0]: m for m in rt.store.groups.members(group)}


def _yes(rt: Runtime, iid: str, user: str, value: str = "yes") -> None:
    accept(rt, iid, user, [Answer(id="ok", choice=value)])


def test_ask_all_resumes_once_after_the_last_answer(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-group-all", {})
    work(rt)
    members = _members(rt, run_id)
    assert len(host.questions) == 2 and EXECUTIONS[run_id] == 1
    _yes(rt, members["b"].id, "UB", "no")
    assert rt.store.get(run_id).status is RunStatus.PAUSED  # one answer of two: still parked
    work(rt)  # shows the answered question, does not resume
    assert EXECUTIONS[run_id] == 1 and host.closed == [(run_id, "answered")]
    shown = json.dumps(inspect_view(admin.show(rt, run_id)))  # an admin's Inspect: each question's progress
    assert "*Waiting on 2 questions at once* (1 answered)" in shown
    assert "`a` A?: waiting on `UA`" in shown and "`b` B?: answered by `UB`" in shown
    with pytest.raises(AcceptRefused) as refused:
        _yes(rt, members["b"].id, "UB")
    assert refused.value.reason is RefusalReason.ANSWERED
    _yes(rt, members["a"].id, "UA")
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED and record.result == "a=yes b=no"
    assert EXECUTIONS[run_id] == 2


def test_ask_any_first_answer_wins_and_the_rest_are_no_longer_needed(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-group-any", {})
    work(rt)
    members = _members(rt, run_id)
    _yes(rt, members["b"].id, "UB")
    assert rt.store.interrupt(members["a"].id).state is InterruptState.NOT_NEEDED
    with pytest.raises(AcceptRefused) as refused:
        _yes(rt, members["a"].id, "UA")
    assert refused.value.reason is RefusalReason.NOT_NEEDED
    work(rt)
    assert rt.store.get(run_id).result == "b=yes"
    assert sorted(host.closed) == [(run_id, "answered"), (run_id, "not_needed")]
    assert len(history_events(rt, run_id, "no longer needed")) == 1


def test_ask_each_quorum_under_a_race_accepts_exactly_the_quorum(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-group-each", {"quorum": 2})
    work(rt)
    members = _members(rt, run_id)
    assert len(host.questions) == 1  # one shared message
    barrier, outcomes = threading.Barrier(3), {}

    def click(user: str) -> None:
        barrier.wait()
        try:
            _yes(rt, members[user].id, user)
            outcomes[user] = "ok"
        except AcceptRefused as exc:
            outcomes[user] = exc.reason.value

    threads = [threading.Thread(target=click, args=(u,)) for u in ("UA", "UB", "UC")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(outcomes.values()) == ["not_needed", "ok", "ok"], outcomes
    work(rt)
    record = rt.store.get(run_id)
    accepted = sorted(u for u, o in outcomes.items() if o == "ok")
    assert record.status is RunStatus.SUCCEEDED
    assert record.result == ",".join(f"{u}=yes" for u in accepted)
    assert host.progress[-1] == (run_id, "2 of 3 answered, 2 needed closed")


def test_a_person_cannot_answer_for_another(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-group-each", {})
    work(rt)
    members = _members(rt, run_id)
    with pytest.raises(AcceptRefused) as refused:
        _yes(rt, members["UA"].id, "UB")
    assert refused.value.reason is RefusalReason.NOT_ALLOWED


def test_each_question_expires_by_its_own_on_expiry(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-group-all", {"expires_in": 30})  # open long enough to answer on a loaded machine
    work(rt)
    members = _members(rt, run_id)
    _yes(rt, members["b"].id, "UB")
    report = sweep(rt, now=members["a"].expires_at + 1)
    assert report.expired == [members["a"].id]
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.EXPIRED
    assert (run_id, "expired") in host.closed
    admin.retry(rt, run_id, "UADMIN")  # asks the expired question afresh; the answered one stands
    work(rt)
    again = _members(rt, run_id)
    assert list(again) == ["a"] and again["a"].id != members["a"].id
    _yes(rt, again["a"].id, "UA", "no")
    work(rt)
    assert rt.store.get(run_id).result == "a=no b=yes"


def test_cancel_closes_every_open_question(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-group-all", {})
    work(rt)
    members = _members(rt, run_id)
    admin.cancel(rt, run_id, "UADMIN")
    assert rt.store.get(run_id).status is RunStatus.CANCELLED and host.closed == []
    work(rt)  # a worker shows the cancel
    assert {rt.store.interrupt(m.id).state for m in members.values()} == {InterruptState.CANCELLED}
    assert host.closed == [(run_id, "cancelled"), (run_id, "cancelled")]
    assert admin.summarize(rt, rt.store.get(run_id)).questions[0].state == "cancelled"


def test_a_void_answer_asks_only_that_key_again(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"v": 1}))

    def bound(run: Any, text: str) -> str:
        got = run.ask_all(
            {"a": _yes_no("A?", ["UA"]), "b": _yes_no("B?", ["UB"])},
            context={"a": json.loads(facts.read_text())},
        )
        return f"a={got['a']['ok']} b={got['b']['ok']} changed={run.context_changed('a')}"

    agent("t-group-bound")(bound)
    run_id = start(rt, "t-group-bound", {})
    work(rt)
    members = _members(rt, run_id)
    _yes(rt, members["a"].id, "UA")
    facts.write_text(json.dumps({"v": 2}))
    _yes(rt, members["b"].id, "UB", "no")
    work(rt)
    again = _members(rt, run_id)
    assert list(again) == ["a"] and again["a"].attempt == 2
    assert [c.field for c in again["a"].context_changes] == ["v"]
    _yes(rt, again["a"].id, "UA", "no")
    work(rt)
    assert rt.store.get(run_id).result == "a=no b=no changed=True"
    assert host.superseded == [(run_id, members["a"].id, ["v"])]


def _signoff(rt: Runtime, iid: str, user: str, decision: str) -> None:
    accept(rt, iid, user, [Answer(id="decision", choice=decision)])


@pytest.mark.parametrize(("second", "published"), [("ship", True), ("block", False)])
def test_the_release_agent_publishes_on_two_signoffs_unless_one_blocks(
    r: Redis, tmp_path: Path, second: str, published: bool
) -> None:
    load_agents()  # the shipped agents, `release` among them
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "release", "api v2.0.1 U0AAA U0BBB U0CCC")
    work(rt)
    members = _members(rt, run_id)
    _signoff(rt, members["U0CCC"].id, "U0CCC", "ship")
    _signoff(rt, members["U0AAA"].id, "U0AAA", second)
    work(rt)
    record = rt.store.get(run_id)
    release_file = tmp_path / "releases" / "api"
    if published:
        assert record.result == "Released api v2.0.1, signed off by <@U0AAA>, <@U0CCC>."
        assert release_file.read_text() == "v2.0.1\n"
        assert json.loads((tmp_path / "releases.jsonl").read_text())["signed_off_by"] == ["U0AAA", "U0CCC"]
    else:
        assert record.result == "Release of api v2.0.1 blocked by <@U0AAA>."
        assert not release_file.exists()
    assert rt.store.interrupt(members["U0BBB"].id).state is InterruptState.NOT_NEEDED


def test_retention_deletes_a_finished_runs_questions_and_groups(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-group-each", {})
    work(rt)
    for user, member in _members(rt, run_id).items():
        _yes(rt, member.id, user)
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert list(r.scan_iter("parley:group:*")) and list(r.scan_iter("parley:interrupt:*"))
    assert rt.store.retention.purge(run_id, cutoff=time.time() + 1) is not None
    assert list(r.scan_iter("parley:group:*")) == [] and list(r.scan_iter("parley:interrupt:*")) == []
    assert [k for k in r.scan_iter("parley:*") if run_id.encode() in k] == []


def test_ask_each_and_ask_any_answers_on_changed_facts_are_asked_again(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"v": 1}))

    def each_bound(run: Any, text: str) -> str:
        got = run.ask_each(_yes_no("Approve?", ["UA", "UB"]), key="approve", context=json.loads(facts.read_text()))
        return f"{sorted(got)} changed={run.context_changed('approve')}"

    def any_bound(run: Any, text: str) -> str:
        now = json.loads(facts.read_text())
        key, got = run.ask_any({"a": _yes_no("A?", ["UA"]), "b": _yes_no("B?", ["UB"])}, context={"a": now, "b": now})
        return f"{key}={got['ok']} changed={run.context_changed(key)}"

    agent("t-group-each-bound")(each_bound)
    agent("t-group-any-bound")(any_bound)
    each_id, any_id = start(rt, "t-group-each-bound", {}), start(rt, "t-group-any-bound", {})
    work(rt)
    each, anyq = _members(rt, each_id), _members(rt, any_id)
    _yes(rt, each["UA"].id, "UA")
    facts.write_text(json.dumps({"v": 2}))
    _yes(rt, each["UB"].id, "UB")
    _yes(rt, anyq["a"].id, "UA")
    work(rt)
    again_each, again_any = _members(rt, each_id), _members(rt, any_id)
    assert {m.attempt for m in again_each.values()} == {2} and sorted(again_each) == ["UA", "UB"]
    assert [c.field for c in again_each["UA"].context_changes] == ["v"]
    assert {k: m.attempt for k, m in again_any.items()} == {"a": 2, "b": 2}
    assert sorted((run, fields) for run, _, fields in host.superseded) == sorted([(each_id, ["v"]), (any_id, ["v"])])
    for user, member in again_each.items():
        _yes(rt, member.id, user)
    _yes(rt, again_any["b"].id, "UB", "no")
    work(rt)
    assert rt.store.get(each_id).result == "['UA', 'UB'] changed=True"
    assert rt.store.get(any_id).result == "b=no changed=False"


def test_ask_each_counts_each_member_of_a_user_group_toward_the_quorum(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    host.groups = {"S0REVIEW": ["UA", "UB"]}
    run_id = start(rt, "t-group-each-team", {})
    work(rt)
    members = _members(rt, run_id)
    assert sorted(members) == ["UA", "UB", "UD"]  # the group's members, each asked on their own
    host.groups = {"S0REVIEW": ["UX"]}  # the group changes while the run waits: the run asks whom it asked
    with pytest.raises(AcceptRefused) as refused:
        _yes(rt, members["UA"].id, "UB")  # nobody answers for another member
    assert refused.value.reason is RefusalReason.NOT_ALLOWED
    _yes(rt, members["UA"].id, "UA")
    _yes(rt, members["UB"].id, "UB", "no")
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED and record.result == "UA=yes,UB=no"


def _unconfirmed_runtime(r: Redis, tmp_path: Path) -> Runtime:
    """A runtime waiting for one more replica than the test Redis has: no answer is ever confirmed."""
    missing = int(r.info("replication")["connected_slaves"]) + 1
    return runtime_and_host(r, tmp_path, min_replicas=missing)[0]


def test_an_unconfirmed_answer_is_kept_and_the_same_answers_again_are_that_acceptance(r: Redis, tmp_path: Path) -> None:
    rt = _unconfirmed_runtime(r, tmp_path)
    run_id = start(rt, "t-group-each", {"quorum": 2})
    work(rt)
    gid = paused(rt, run_id)
    members = _members(rt, run_id)
    yes = [Answer(id="ok", choice="yes")]
    outcome = try_accept(rt, members["UA"], "UA", yes, team=None, token="UA:click-1")
    assert outcome.reason is RefusalReason.UNCONFIRMED
    assert "Please submit it again" in refusal_text(outcome)  # the single question's wording; a form stays open
    assert rt.store.interrupt(members["UA"].id).state is InterruptState.ANSWERED  # kept on the master
    for click in (2, 3):  # submitted again while no replica confirms: recognised, still unconfirmed
        with pytest.raises(AcceptRefused) as again:
            accept(rt, members["UA"].id, "UA", yes, token=f"UA:click-{click}")
        assert again.value.reason is RefusalReason.UNCONFIRMED
    group = rt.store.groups.group(gid)
    assert group is not None and group.state == "open"  # UA counted once toward the quorum of 2
    assert rt.store.get(run_id).status is RunStatus.PAUSED
    with pytest.raises(AcceptRefused) as last:  # the answer that completes the group: kept, the run queued
        accept(rt, members["UB"].id, "UB", yes, token="UB:click-1")
    assert last.value.reason is RefusalReason.UNCONFIRMED
    assert rt.store.get(run_id).status is RunStatus.QUEUED
    # A replica confirms now (a runtime that does not wait stands for it): the same answers are that acceptance.
    plain, _ = runtime_and_host(r, tmp_path)
    for user in ("UA", "UB"):
        accept(plain, members[user].id, user, yes, token=f"{user}:click-9")
    executions = [j for j in plain.queue.get_jobs() if j.func_name == EXECUTE]
    assert [j.id for j in executions] == [job_ids.resume(run_id, gid)]  # the run was queued once
    with pytest.raises(AcceptRefused) as late:
        _yes(plain, members["UC"].id, "UC")
    assert late.value.reason is RefusalReason.NOT_NEEDED
    work(plain)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "UA=yes,UB=yes")
    assert EXECUTIONS[run_id] == 2  # asked, then resumed once
    assert len(history_events(rt, run_id, "answered")) == 2  # one line per member, none for a resubmission


def test_after_an_unconfirmed_answer_other_answers_are_refused_as_answered(r: Redis, tmp_path: Path) -> None:
    rt = _unconfirmed_runtime(r, tmp_path)
    run_id = start(rt, "t-group-shared", {})
    work(rt)
    a = _members(rt, run_id)["a"]
    yes = [Answer(id="ok", choice="yes")]
    assert try_accept(rt, a, "UA", yes, team=None, token="UA:click-1").reason is RefusalReason.UNCONFIRMED
    for user, value in (("UA", "no"), ("UB", "yes")):  # other answers, or another of its people
        with pytest.raises(AcceptRefused) as refused:
            accept(rt, a.id, user, [Answer(id="ok", choice=value)], token=f"{user}:click-2")
        assert refused.value.reason is RefusalReason.ANSWERED and refused.value.refusal.by == "UA"
    stored = rt.store.interrupt(a.id)
    assert stored is not None and (stored.answered_by, stored.answers) == ("UA", yes)
    assert len(history_events(rt, run_id, "answered")) == 1
    assert rt.store.get(run_id).status is RunStatus.PAUSED


class ParkRecordsHost(RecordingHost):
    """Leaves where it posted each question to the park that follows, as the Slack host does when
    nobody but the run's starter is asked (`record_question_message(parked_next=True)`)."""

    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        if not run.question_message:
            with self.lock:
                self.questions.append((run.run_id, run.interrupt_id or ""))
            run.record_question_message({"channel": "C1", "ts": f"1.{len(self.questions)}"}, parked_next=True)
        return Outcome(paused=True)


def test_ask_all_records_each_message_a_host_left_to_the_park_and_locks_it_after_the_resume(
    r: Redis, tmp_path: Path
) -> None:
    host = ParkRecordsHost()
    rt = make_runtime(r, tmp_path, host)
    run_id = start(rt, "t-group-all", {})
    work(rt)
    members = _members(rt, run_id)
    assert sorted(m.message.get("ts", "") for m in members.values()) == ["1.1", "1.2"]
    _yes(rt, members["a"].id, "UA")
    _yes(rt, members["b"].id, "UB")
    work(rt)
    assert rt.store.get(run_id).result == "a=yes b=yes"
    assert sorted(host.closed) == [(run_id, "answered"), (run_id, "answered")]  # both locked once
