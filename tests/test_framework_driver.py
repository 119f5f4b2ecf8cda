"""The framework driver's one bound and one key scheme, under each adapter's real framework code.

The agents (tests/driver_agents.py) ask to approve one more action every round, forever. The
driver's `MAX_ROUNDS`, lowered here, is the only thing that ends each of them: after that many
rounds of answers the run fails with `TooManyRounds`, naming the bound. Every round's step and
ask key follow `{name}:{n}` and `{name}:{n}:{id}`, and what a round recorded is read back as is
by every later execution: no model call and no action is repeated.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import driver_agents
import pytest
from effect_counters import count
from redis import Redis
from runtime_helpers import paused, runtime_and_host, start, work

from workers.exceptions import AgentError
from workers.integrations import driver
from workers.interaction import Answer
from workers.interaction.approval import approval_answers, approval_request
from workers.runtime.acceptance import accept
from workers.runtime.wiring import Runtime
from workers.store import journal_names
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
BOUND = 3

FRAMEWORKS: dict[str, tuple[str, Callable[[str], str], Callable[[str, int], str]]] = {
    "pydantic_ai": (driver_agents.PAI, lambda run_id: "pydantic_ai", lambda run_id, n: f"pydantic_ai:{n}:approve.1"),
    "openai_agents": (driver_agents.OA, lambda run_id: "oa", lambda run_id, n: f"oa:{n}:call_{n}"),
    "langgraph": (
        driver_agents.LG,
        lambda run_id: f"langgraph:{run_id}",
        lambda run_id, n: f"langgraph:{run_id}:{n}:0",
    ),
}
"""Each framework's agent, its driver name, and the ask key of round `n`'s one pause."""


def answer_round(rt: Runtime, run_id: str) -> list[str]:
    """Approve every question the run is parked on; their ask keys."""
    first = paused(rt, run_id)
    group = rt.store.groups.group(first)
    one = rt.store.interrupt(first)
    questions = [one] if group is None and one is not None else rt.store.groups.members(group) if group else []
    for q in questions:
        if q.request.approval is not None:
            given = approval_answers(q.request, [], approve=True)
        else:  # LangGraph's approve-or-reject choice
            given = [Answer(id="decision", choice="approve")]
        accept(rt, q.id, "U1", given)
    return [q.key for q in questions]


def steps_of(rt: Runtime, run_id: str, name: str) -> dict[str, Any]:
    """The driver's recorded rounds of `name`, by step key."""
    recorded = journal_names.steps(rt.store.journal(run_id))
    return {k: v for k, v in recorded.items() if k.rsplit(":", 1)[0] == name}


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_a_framework_that_keeps_pausing_stops_at_the_one_bound_with_stable_keys(
    r: Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    monkeypatch.setattr(driver, "MAX_ROUNDS", BOUND)
    agent_name, name_of, ask_key = FRAMEWORKS[framework]
    rt, _ = runtime_and_host(r, tmp_path, retry_delays=(0.0, 0.0))
    run_id = start(rt, agent_name, "")
    name = name_of(run_id)
    asked, seen = [], dict[str, Any]()
    for _ in range(BOUND):
        work(rt)
        now = steps_of(rt, run_id, name)
        assert {k: now[k] for k in seen} == seen  # a replay read every earlier round under its key, unchanged
        seen = now
        asked.append(answer_round(rt, run_id))
    work(rt)

    record = rt.store.get(run_id)
    assert record.status is RunStatus.FAILED, record.result
    assert "MAX_ROUNDS" in (record.error or "") and f"after {BOUND} rounds of answers" in (record.error or "")
    assert asked == [[ask_key(run_id, n)] for n in range(1, BOUND + 1)]  # one pause: one question, not a group
    assert sorted(steps_of(rt, run_id, name)) == [f"{name}:{n}" for n in range(1, BOUND + 2)]
    assert count(tmp_path, run_id, "acted") == BOUND  # each approved action ran once, none again on a replay
    if framework != "langgraph":
        assert count(tmp_path, run_id, "model") == BOUND + 1  # one model call per round, never repeated


def test_too_many_rounds_is_an_agent_error_so_the_run_fails_without_a_retry() -> None:
    assert issubclass(driver.TooManyRounds, AgentError)
    assert driver.MAX_ROUNDS == 100  # the documented bound (docs/integrations.md)
    keys = driver.Keys("oa")
    assert (keys.step(2), keys.ask(keys.step(2), "call_1")) == ("oa:2", "oa:2:call_1")


def test_a_single_approval_is_asked_as_run_approve_would_build_it() -> None:
    """The driver asks one approval with `run.approve`: what it rebuilds is the request the adapter made."""
    schema = {"type": "object", "properties": {"amount": {"type": "integer"}, "to": {"type": "string"}}}
    made = [
        approval_request("pay", {"amount": 5, "to": "bob"}, schema=schema, editable=["amount"]),
        approval_request("delete_file", {"path": "a.log"}, editable=False, assignees=["U2"], expires_in=600),
        approval_request("refund", {"order": "A-1", "amount": 40}, editable=True, reason="Run refund"),
    ]
    for request in made:
        assert approval_request(**driver.approval_arguments(request)) == request


EARLIER = {
    "pydantic_ai": driver.Keys("pydantic_ai", sep="."),  # `pydantic_ai.1`, asks `pydantic_ai.1.approve.1`
    "langgraph": None,  # `langgraph:<thread>:0`, asks `langgraph:<thread>:0:0`: built per run below
}


@pytest.mark.parametrize("framework", sorted(EARLIER))
def test_a_run_paused_under_the_earlier_keys_goes_on_under_them(
    r: Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framework: str
) -> None:
    """A run an earlier version parked (its first call and questions under that version's keys)
    resumes under the same keys: no call runs again, no question is asked again."""
    real = driver.Keys
    rt, _ = runtime_and_host(r, tmp_path, retry_delays=(0.0, 0.0))
    if framework == "pydantic_ai":
        run_id = start(rt, "t-pai-pay", {})
        earlier = EARLIER["pydantic_ai"]
    else:
        run_id = start(rt, driver_agents.LG, "")
        earlier = real(f"langgraph:{run_id}", first=0)
    assert earlier is not None
    monkeypatch.setattr(driver, "Keys", lambda name: earlier)  # this execution writes as the earlier version did
    work(rt)
    monkeypatch.undo()
    first = earlier.step(1)
    if framework == "pydantic_ai":
        assert sorted(answer_round(rt, run_id)) == [f"{first}.approve.1", f"{first}.approve.2"]
        work(rt)
        record = rt.store.get(run_id)
        assert record.status is RunStatus.SUCCEEDED, record.error
        assert record.result == "pay-alice: paid 5 to alice; pay-bob: paid 7 to bob"
        assert count(tmp_path, run_id, "model") == 2 and count(tmp_path, run_id, "pay.alice") == 1
        expected = [earlier.step(1), earlier.step(2)]
    else:
        monkeypatch.setattr(driver, "MAX_ROUNDS", 2)
        assert answer_round(rt, run_id) == [f"{first}:0"]
        work(rt)
        assert answer_round(rt, run_id) == [f"langgraph:{run_id}:1:0"]
        work(rt)
        record = rt.store.get(run_id)
        assert record.status is RunStatus.FAILED and "MAX_ROUNDS" in (record.error or "")
        assert count(tmp_path, run_id, "acted") == 2
        expected = [earlier.step(n) for n in (1, 2, 3)]
    recorded = journal_names.steps(rt.store.journal(run_id))
    calls = sorted(k for k in recorded if k.startswith(earlier.name) and ":model:" not in k and ":tool:" not in k)
    assert calls == expected  # every call under the earlier keys, none under the new ones
