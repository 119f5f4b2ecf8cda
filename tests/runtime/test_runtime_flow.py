"""Runs that ask, park, resume on an accepted answer and finish, on real Redis and RQ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from runtime_helpers import make_runtime, parked, paused, runtime_and_host, said, start, work

from workers import agent
from workers.interaction import Answer, Item, ItemType, Request
from workers.runtime.acceptance import AcceptRefused, accept
from workers.runtime.execute import execute
from workers.store import keys
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

COUNTER: dict[str, int] = {}


def _two_questions(run: Any, text: str) -> str:
    first = run.ask(
        Request(
            reason="Pick a colour",
            items=[Item(id="colour", text="Colour", type=ItemType.SELECT, options=["red", "green"])],
        )
    )
    run.say(f"got {first['colour']}")
    made = run.step("side-effect", lambda: COUNTER.__setitem__(run.run_id, COUNTER.get(run.run_id, 0) + 1) or 1)
    second = run.ask(Request(reason="And a name", items=[Item(id="name", text="Name", type=ItemType.FREE_TEXT)]))
    return f"{first['colour']} {second['name']} {made}"


agent("test-two-questions")(_two_questions)


def test_run_that_asks_twice_pauses_twice_and_finishes(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, q1 = parked(rt, "test-two-questions")
    assert rt.queue.count == 0 and rt.store.count(RunStatus.RUNNING) == 0  # the worker is free
    accept(rt, q1, "U1", [Answer(id="colour", choice="green")])
    work(rt)
    q2 = paused(rt, run_id)
    assert q2 != q1
    accept(rt, q2, "U1", [Answer(id="name", free_text="Ada")])
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED
    assert record.result == "green Ada 1"
    assert COUNTER[run_id] == 1
    assert host.said == [(run_id, "got green")]
    assert host.finals == [(run_id, "green Ada 1")]
    assert len(host.questions) == 2


def _says_in_and_after_a_step(run: Any, text: str) -> str:
    run.step("fetch", lambda: run.say("fetching") or 1)  # a replay never runs this function
    run.say("fetched")
    run.ask(Request(reason="Go on?", items=[Item(id="ok", text="OK", type=ItemType.FREE_TEXT)]))
    run.say("going on")
    run.say("nearly there")
    return "done"


agent("test-says-in-a-step")(_says_in_and_after_a_step)


def test_a_say_inside_a_step_shifts_no_later_say_on_replay(r: Redis, tmp_path: Path) -> None:
    """Each say is posted once: none after the park is taken for one before it."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id, question = parked(rt, "test-says-in-a-step")
    accept(rt, question, "U1", [Answer(id="ok", free_text="yes")])
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert said(host, run_id) == ["fetching", "fetched", "going on", "nearly there"]


def _asks_in_and_after_a_step(run: Any, text: str) -> str:
    first = run.step("pick", lambda: run.ask(_free("First?"))["v"])  # a replay never runs this function
    second = run.ask(_free("Second?"))["v"]
    return f"{first} {second}"


def _free(reason: str) -> Request:
    return Request(reason=reason, items=[Item(id="v", text="Value", type=ItemType.FREE_TEXT)])


agent("test-asks-in-a-step")(_asks_in_and_after_a_step)


def test_an_ask_inside_a_step_leaves_a_later_ask_its_own_answer(r: Redis, tmp_path: Path) -> None:
    """The ask after a recorded step is not handed the answer asked inside it."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id, q1 = parked(rt, "test-asks-in-a-step")
    accept(rt, q1, "U1", [Answer(id="v", free_text="one")])
    work(rt)
    q2 = paused(rt, run_id)
    accept(rt, q2, "U1", [Answer(id="v", free_text="two")])
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "one two")
    assert [iid for rid, iid in host.questions if rid == run_id] == [q1, q2]


@agent("test-swallows-the-park")
def _swallows_the_park(run: Any, text: str) -> str:
    try:
        first = run.ask(_free("First?"))["v"]
    except BaseException:  # a mistake (the park is a BaseException), but one agents make
        first = "none"
    return f"{first} {run.ask(_free('Second?'))['v']}"


def test_an_ask_after_a_swallowed_park_parks_on_the_first_question(r: Redis, tmp_path: Path) -> None:
    """The ask after the park is not made; the execution ends paused, not as one that lost the run."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "test-swallows-the-park")
    assert execute(rt, run_id) == "paused"
    q1 = paused(rt, run_id)
    assert host.questions == [(run_id, q1)]
    accept(rt, q1, "U1", [Answer(id="v", free_text="one")])
    work(rt)
    accept(rt, paused(rt, run_id), "U1", [Answer(id="v", free_text="two")])
    work(rt)
    assert rt.store.get(run_id).result == "one two"


def test_refusals_change_nothing(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    _, q1 = parked(rt, "test-two-questions")

    def snapshot() -> dict[str, Any]:
        return {k: r.dump(k) for k in sorted(r.scan_iter(f"{keys.PREFIX}*"))}

    before = snapshot()
    cases = [
        ("U2", [Answer(id="colour", choice="red")], "not_allowed"),
        ("U1", [Answer(id="colour", choice="blue")], "invalid"),
        ("U1", [], "invalid"),
        ("U1", [Answer(id="nope", choice="red")], "invalid"),
    ]
    for user, answers, reason in cases:
        with pytest.raises(AcceptRefused) as err:
            accept(rt, q1, user, answers)
        assert err.value.reason == reason
    with pytest.raises(AcceptRefused) as err:
        accept(rt, "q-does-not-exist", "U1", [])
    assert err.value.reason == "unknown"
    with pytest.raises(AcceptRefused) as err:
        accept(rt, q1, "U1", [Answer(id="colour", choice="red")], team="T-other")
    assert err.value.reason == "wrong_team"
    for team, enterprise in (("", None), ("", "E-other")):  # a payload with `"team": null`
        with pytest.raises(AcceptRefused) as err:
            accept(rt, q1, "U1", [Answer(id="colour", choice="red")], team=team, enterprise=enterprise)
        assert err.value.reason == "wrong_team"
        assert str(err.value) == "this question was asked in another Slack workspace"
    assert snapshot() == before
    accept(rt, q1, "U1", [Answer(id="colour", choice="red")])
    with pytest.raises(AcceptRefused) as err:
        accept(rt, q1, "U1", [Answer(id="colour", choice="green")])
    assert err.value.reason == "answered" and err.value.refusal.by == "U1"


def test_execute_skips_a_run_that_is_not_queued(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "test-two-questions")
    work(rt)
    assert execute(rt, run_id) == "paused"


def test_an_org_wide_install_answers_by_enterprise_when_the_payload_has_no_team(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run = rt.store.create("test-two-questions", "", "U1", {"host": "test", "team": "T1", "enterprise": "E1"})
    rt.queue.enqueue("workers.runtime.jobs.execute_run", run.id, job_id=run.job)
    work(rt)
    iid = paused(rt, run.id)
    with pytest.raises(AcceptRefused) as err:
        accept(rt, iid, "U1", [Answer(id="colour", choice="red")], team="", enterprise="E2")
    assert err.value.reason == "wrong_team"
    accept(rt, iid, "U1", [Answer(id="colour", choice="red")], team="", enterprise="E1")
    assert rt.store.get(run.id).status is RunStatus.QUEUED
