"""Answers bound to the facts they were given on, on real Redis and RQ.

The agents here read their facts live on every replay (from `FACTS`, which the test changes
between executions) and pass them as `run.ask(..., context=...)`. An answer given on other
facts than the agent holds when it resumes is void: the question is asked again as the next
attempt of its key, and the counted action never runs on the stale answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from effect_counters import bump, count
from pydantic import BaseModel, Field
from redis import Redis
from runtime_helpers import history_events, paused, runtime_and_host, start, work

import workers.agents.deploy  # noqa: F401  (registers `deploy`)
from workers import agent
from workers.interaction import Answer, AnswerError, ContextError, Item, ItemType, Request
from workers.interaction.approval import approval_answers
from workers.interaction.context import canonical, digest
from workers.runtime.acceptance import accept
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

FACTS: dict[str, Any] = {}
"""run id -> the facts its agent reads now; a test changes them between executions."""
APPROVE = Request(
    reason="Approve the deployment?",
    items=[Item(id="decision", text="Decision", type=ItemType.SELECT, options=["approve", "reject"])],
)


@agent("t-bound")
def bound_agent(run: Any, text: str) -> str:
    """Asks to approve its live facts, then acts once (counted) and reports what it acted on."""
    facts = FACTS[run.run_id]
    answers = run.ask(APPROVE, key="approval", context=facts)
    bump(run.data_dir, run.run_id, "returned")
    run.step("act", lambda: bump(run.data_dir, run.run_id, "act"))
    return f"{answers['decision']} {facts['version']} changed={run.context_changed('approval')}"


@agent("t-bad-context")
def bad_context_agent(run: Any, text: str) -> str:
    """Asks with the context `FACTS` holds for it; with `catch` in its text, reports the refusal instead."""
    try:
        run.ask(APPROVE, key="approval", context=FACTS[run.run_id])
    except ContextError as exc:
        if text != "catch":
            raise
        return f"refused: {exc}"
    return "asked"


def _start(rt: Any, agent_name: str, facts: Any, text: str = "") -> str:
    run_id = start(rt, agent_name, text)
    FACTS[run_id] = facts
    work(rt)
    return run_id


def _approve(rt: Any, iid: str) -> None:
    accept(rt, iid, "U1", [Answer(id="decision", choice="approve")])
    work(rt)


V142 = {"service": "api", "version": "v1.4.2", "target": "prod-eu"}


def test_an_answer_on_unchanged_facts_goes_through_at_once(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = _start(rt, "t-bound", dict(V142))
    q1 = paused(rt, run_id)
    asked = rt.store.interrupt(q1)
    assert asked.context == V142 and asked.context_digest == digest(canonical(V142))
    assert host.facts[q1] == (V142, [])  # the host was given the facts to show
    FACTS[run_id] = {"target": "prod-eu", "version": "v1.4.2", "service": "api"}  # equal, in another order
    _approve(rt, q1)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "approve v1.4.2 changed=False")
    assert count(tmp_path, run_id, "act") == 1 and len(host.questions) == 1 and host.superseded == []
    [answered] = history_events(rt, run_id, "answered")
    assert answered.detail["context_digest"] == asked.context_digest  # recorded with the answer
    assert history_events(rt, run_id, "context changed") == []


def test_changed_facts_void_the_answer_and_ask_again_showing_what_changed(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = _start(rt, "t-bound", dict(V142))
    q1 = paused(rt, run_id)
    FACTS[run_id] = {**V142, "version": "v1.4.3"}
    _approve(rt, q1)

    q2 = paused(rt, run_id)  # asked again, not acted on
    assert q2 != q1 and count(tmp_path, run_id, "act") == 0 and count(tmp_path, run_id, "returned") == 0
    again = rt.store.interrupt(q2)
    assert (again.key, again.attempt, again.context) == ("approval", 2, FACTS[run_id])
    assert [(c.field, c.old, c.new) for c in again.context_changes] == [("version", "v1.4.2", "v1.4.3")]
    assert host.facts[q2] == (FACTS[run_id], again.context_changes)
    assert host.superseded == [(run_id, q1, ["version"])]
    [changed] = history_events(rt, run_id, "context changed")
    assert changed.detail == {
        "interrupt_id": q1,
        "key": "approval",
        "attempt": 1,
        "fields": ["version"],
        "old_digest": rt.store.interrupt(q1).context_digest,
        "new_digest": again.context_digest,
    }

    _approve(rt, q2)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "approve v1.4.3 changed=True")
    assert count(tmp_path, run_id, "act") == 1
    assert host.superseded == [(run_id, q1, ["version"])]  # once, however often the run replays
    assert len(history_events(rt, run_id, "context changed")) == 1


def test_a_void_answer_stays_void_when_the_facts_change_back(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = _start(rt, "t-bound", dict(V142))
    q1 = paused(rt, run_id)
    FACTS[run_id] = {**V142, "target": "prod-us"}
    _approve(rt, q1)
    q2 = paused(rt, run_id)
    FACTS[run_id] = dict(V142)  # back to what the first answer was given on
    _approve(rt, q2)
    q3 = paused(rt, run_id)
    assert rt.store.interrupt(q3).attempt == 3
    assert [(c.field, c.old, c.new) for c in rt.store.interrupt(q3).context_changes] == [
        ("target", "prod-us", "prod-eu")
    ]
    assert count(tmp_path, run_id, "act") == 0
    _approve(rt, q3)
    assert rt.store.get(run_id).result == "approve v1.4.2 changed=True"
    assert [s[1] for s in host.superseded] == [q1, q2]


def test_the_fourth_attempt_fails_the_run_as_any_ask_does(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = _start(rt, "t-bound", {**V142, "version": "v1"})
    for n in (2, 3, 4):
        iid = paused(rt, run_id)
        FACTS[run_id] = {**V142, "version": f"v{n}"}
        _approve(rt, iid)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.FAILED
    assert record.error == "question 'approval' was asked 3 times without a usable answer; giving up"
    assert count(tmp_path, run_id, "act") == 0 and len(host.superseded) == 3
    assert [h.detail["fields"] for h in history_events(rt, run_id, "context changed")] == [["version"]] * 3


TOO_LONG = {"notes": "x" * 2000}


@pytest.mark.parametrize(
    ("context", "says"),
    [
        (
            TOO_LONG,
            "context is 2,012 characters of canonical JSON, over the limit of 2,000; "
            "pass only the facts the person decides on",
        ),
        ({"when": {1, 2}}, "context.when is a set, which is not JSON"),
        ({"n": float("inf")}, "context.n is inf, which JSON cannot hold"),
    ],
)
def test_a_context_too_long_or_not_json_is_refused_before_anything_is_recorded(
    r: Redis, tmp_path: Path, context: Any, says: str
) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = _start(rt, "t-bad-context", context)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.FAILED and record.error == says  # at once: no retry would fix it
    assert history_events(rt, run_id, "retry") == []
    assert host.questions == [] and record.interrupt == ""
    assert not any(field.startswith("ask:") for field in rt.store.journal(run_id))

    caught = _start(rt, "t-bad-context", context, "catch")
    assert rt.store.get(caught).result == f"refused: {says}"  # a port error the agent may catch


def test_an_ask_without_context_is_bound_to_no_facts(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = _start(rt, "t-bad-context", None)  # `context=None`: asked as before
    iid = paused(rt, run_id)
    asked = rt.store.interrupt(iid)
    assert (asked.context, asked.context_digest, host.facts[iid]) == (None, "", (None, []))
    _approve(rt, iid)
    assert rt.store.get(run_id).result == "asked"
    [answered] = history_events(rt, run_id, "answered")
    assert "context_digest" not in answered.detail


def approved(rt: Any, iid: str, edits: list[Answer] | None = None) -> list[Answer]:
    """An approval's answers as Approve (or Edit… with `edits`) gives them."""
    interrupt = rt.store.interrupt(iid)
    assert interrupt is not None
    return approval_answers(interrupt.request, edits or [], approve=True)


@agent("t-approve")
def approve_agent(run: Any, text: str) -> str:
    """Proposes its live args for approval, then acts once (counted) on what was approved."""
    decision = run.approve("Scale api", FACTS[run.run_id], key="scale")
    run.step("act", lambda: bump(run.data_dir, run.run_id, "act"))
    return f"{decision.args['replicas']} edited={decision.edited} changed={run.context_changed('scale')}"


@pytest.mark.parametrize(
    ("proposed_next", "asked_again"),
    [(2, False), (4, True)],
    ids=["proposes-what-was-approved", "proposes-something-else"],
)
def test_an_edited_approval_is_bound_to_the_edited_args(
    r: Redis, tmp_path: Path, proposed_next: int, asked_again: bool
) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = _start(rt, "t-approve", {"service": "api", "replicas": 3})
    work(rt)
    q1 = paused(rt, run_id)
    accept(rt, q1, "U1", approved(rt, q1, [Answer(id="replicas", number=2)]))
    FACTS[run_id] = {"service": "api", "replicas": proposed_next}  # the agent now proposes this
    work(rt)
    if not asked_again:
        assert rt.store.get(run_id).result == "2 edited=True changed=False"
        [edits] = history_events(rt, run_id, "approved with edits")
        assert edits.detail["fields"] == ["replicas"] and edits.by == "U1"
        return
    q2 = paused(rt, run_id)
    assert [(c.field, c.old, c.new) for c in rt.store.interrupt(q2).context_changes] == [("replicas", 3, 4)]
    assert count(tmp_path, run_id, "act") == 0
    accept(rt, q2, "U1", approved(rt, q2))
    work(rt)
    assert rt.store.get(run_id).result == "4 edited=False changed=True"


class Settings(BaseModel):
    name: str
    limits: dict[str, int]  # no item asks for a dict


class Schedule(BaseModel):
    day: str = Field(pattern=r"^(mon|tue)$")
    hours: int = Field(ge=1, le=8)


@agent("t-form")
def form_agent(run: Any, text: str) -> str:
    """Asks for `Settings` (refused at ask time) or `Schedule`, and reports the instance."""
    if text == "settings":
        return str(run.ask_form(Settings, reason="Settings?"))
    schedule = run.ask_form(Schedule, reason="When?")
    return f"{type(schedule).__name__} {schedule.day} {schedule.hours}"


def test_ask_form_refuses_a_field_no_item_fits_before_anything_is_posted(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-form", "settings")
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.FAILED and "Settings.limits: a field of type" in record.error
    assert host.questions == [] and not [k for k in rt.store.journal(run_id) if k.startswith("ask:")]


def test_ask_form_returns_the_model_and_refuses_what_the_model_refuses(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-form", "schedule")
    work(rt)
    iid = paused(rt, run_id)
    with pytest.raises(AnswerError, match="Hours: at most 8"):
        rt.store.interrupt(iid).request.validate_answers(
            [Answer(id="day", free_text="mon"), Answer(id="hours", number=9)]
        )
    accept(rt, iid, "U1", [Answer(id="day", free_text="tue"), Answer(id="hours", number=4)])
    work(rt)
    assert rt.store.get(run_id).result == "Schedule tue 4"


def test_the_deploy_agent_binds_its_approval_to_the_release_it_reads_live(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    release = tmp_path / "releases" / "billing"
    release.parent.mkdir(parents=True)
    release.write_text("v2.0.0\n")
    run_id = start(rt, "deploy", "billing to staging")
    work(rt)
    q1 = paused(rt, run_id)
    assert rt.store.interrupt(q1).context == {
        "service": "billing",
        "version": "v2.0.0",
        "target": "staging",
        "replicas": 3,
    }
    release.write_text("v2.0.1\n")  # the pipeline publishes a newer build before the approval
    accept(rt, q1, "U1", approved(rt, q1))
    work(rt)
    q2 = paused(rt, run_id)
    assert [(c.field, c.old, c.new) for c in rt.store.interrupt(q2).context_changes] == [
        ("version", "v2.0.0", "v2.0.1")
    ]
    assert not (tmp_path / "deployments.jsonl").exists()
    accept(rt, q2, "U1", approved(rt, q2))
    work(rt)
    assert (
        rt.store.get(run_id).result == "Deployment of billing v2.0.1 to staging with 3 replicas approved and recorded."
    )
    [entry] = [json.loads(line) for line in (tmp_path / "deployments.jsonl").read_text().splitlines()]
    assert (entry["version"], entry["target"], entry["decision"]) == ("v2.0.1", "staging", "approve")
    assert host.said == [
        (run_id, "The facts changed after an earlier answer; this one was given on billing v2.0.1 to staging.")
    ]


@agent("t-approve-schema")
def approve_schema_agent(run: Any, text: str) -> str:
    """Proposes `FACTS`' args for approval, typed by the schema `FACTS` holds."""
    facts = FACTS[run.run_id]
    decision = run.approve("Scale api", facts["args"], schema=facts["schema"], key="scale")
    return f"{decision.args['replicas']}"


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"$ref": "http://127.0.0.1:9/schema.json"}, "has a $ref that cannot be followed"),
        ({"$ref": "#"}, "refers to itself without end"),
        ({"type": "object", "properties": {"replicas": {"type": 7}}}, "is not valid JSON Schema"),
    ],
    ids=["remote-ref", "ref-loop", "not-a-schema"],
)
def test_an_approval_schema_no_edit_could_be_checked_against_fails_the_run_before_asking(
    r: Redis, tmp_path: Path, schema: dict[str, Any], says: str
) -> None:
    """As the API refuses such an approval (422): its edits would otherwise pass unchecked."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id = _start(rt, "t-approve-schema", {"args": {"replicas": 3}, "schema": schema})
    record = rt.store.get(run_id)
    assert record.status is RunStatus.FAILED and says in record.error, record.error  # at once: no retry
    assert history_events(rt, run_id, "retry") == []
    assert host.questions == [] and record.interrupt == ""


def test_an_approval_schema_that_can_be_checked_is_asked(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    schema = {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}}, "required": ["replicas"]}
    run_id = _start(rt, "t-approve-schema", {"args": {"replicas": 3}, "schema": schema})
    q1 = paused(rt, run_id)
    accept(rt, q1, "U1", approved(rt, q1, [Answer(id="replicas", number=2)]))
    work(rt)
    assert rt.store.get(run_id).result == "2"
