"""Agents the runtime tests drive, in-process and in `parley worker` subprocesses.

Importable as `PARLEY_AGENTS=agents_for_tests` with the tests directory on
PYTHONPATH. Side effects are counted in files under the run's data directory, not
in Redis or in memory (`effect_counters`), so an execution in a process that was killed still counts.
Agents take their parameters as JSON in the run's text.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from effect_counters import bump, count, counter_path

from workers import agent
from workers.interaction import Item, ItemType, QuestionExpired, Request
from workers.runtime.run import execution_of

# In-process tests park executions here: run id -> event the agent waits on.
GATES: dict[str, threading.Event] = {}
# In-process tests learn here that an execution reached its gate: run id -> event.
REACHED: dict[str, threading.Event] = {}


def _params(text: str) -> dict[str, Any]:
    return json.loads(text) if text.strip().startswith("{") else {}


def _colour(default: str | None = None, **request: Any) -> Request:
    item = Item(id="colour", text="Colour", type=ItemType.SELECT, options=["red", "green"], default=default)
    return Request(reason="Pick a colour", items=[item], **request)


@agent("t-counter")
def counter_agent(run: Any, text: str) -> str:
    """Asks twice with a counted step between the questions."""
    first = run.ask(_colour())
    made = run.step("bump", lambda: bump(run.data_dir, run.run_id, "step"))
    second = run.ask(Request(reason="And a name", items=[Item(id="name", text="Name", type=ItemType.FREE_TEXT)]))
    return f"{first['colour']} {second['name']} {made}"


@agent("t-crash")
def crash_agent(run: Any, text: str) -> str:
    """Records a counted step, then the first time signals `reached` and sleeps to be killed."""
    made = run.step("bump", lambda: bump(run.data_dir, run.run_id, "step"))
    reached = counter_path(run.data_dir, run.run_id, "reached")
    if not reached.exists():
        bump(run.data_dir, run.run_id, "reached")
        time.sleep(float(_params(text).get("sleep", 60)))
    return f"done {made}"


@agent("t-ask")
def ask_agent(run: Any, text: str) -> str:
    """One question; text sets assignees, expiry and last call, a default and whether to catch expiry."""
    p = _params(text)
    request = _colour(
        p.get("default"),
        assignees=p.get("assignees", []),
        expires_in=p.get("expires_in"),
        on_expiry=p.get("on_expiry", "fail"),
        escalate_after=p.get("escalate_after"),
        escalate_to=p.get("escalate_to", []),
        last_call=p.get("last_call"),
    )
    bump(run.data_dir, run.run_id, "executions")
    try:
        answer = run.ask(request)
    except QuestionExpired:
        if not p.get("catch"):
            raise
        return "nobody answered"
    return f"colour {answer['colour']}"


@agent("t-big")
def big_numbers_agent(run: Any, text: str) -> str:
    """An approval naming a 64-bit id, then a whole number with no bound: both past 2**53."""
    decided = run.approve("Delete order", {"order_id": 2**53 + 1}, editable=False)
    rows = run.ask(
        Request(reason="How many rows?", items=[Item(id="n", text="Rows", type=ItemType.NUMBER, integer=True)])
    )
    return f"approved {decided.approved}, rows {rows['n']}"


SEEN: dict[str, list[Any]] = {}
"""What each execution of `t-values` saw its steps return, by run id."""


@agent("t-values")
def values_agent(run: Any, text: str) -> str:
    """Steps of values JSON does not give back as they were, then a question."""
    seen = (run.step("tuple", lambda: (1, 2)), run.step("keys", lambda: {1: "one"}))
    SEEN.setdefault(run.run_id, []).append(seen)
    run.ask(_colour())
    return "done"


@agent("t-nested")
def nested_agent(run: Any, text: str) -> str:
    """A counted effect whose step returns a list nested 2,000 deep."""

    def charge() -> list[Any]:
        bump(run.data_dir, run.run_id, "charge")
        nested: list[Any] = []
        for _ in range(2000):
            nested = [nested]
        return nested

    run.step("charge", charge)
    return "charged"


@agent("t-loud")
def loud_agent(run: Any, text: str) -> str:
    """Raises an exception whose message is a megabyte."""
    raise RuntimeError("x" * 1_000_000)


@agent("t-history")
def history_agent(run: Any, text: str) -> str:
    """Notes tokens, asks, notes tokens again, and asks once more."""
    run.history("tokens", used=100)
    run.step("usage", lambda: run.history("tokens", used=7))  # kept once by its step, as the LLM loop's
    run.ask(_colour(), key="first")
    run.history("tokens", used=50)
    run.ask(_colour(), key="second")
    return "noted"


@agent("t-slow-step")
def slow_step_agent(run: Any, text: str) -> str:
    """A counted step that takes two seconds."""

    def deploy() -> int:
        bump(run.data_dir, run.run_id, "deploy")
        time.sleep(2)
        return 1

    run.step("deploy", deploy)
    return "deployed"


@agent("t-huge-step")
def huge_step_agent(run: Any, text: str) -> str:
    """A counted step returning 65 MB of text."""

    def fetch() -> str:
        bump(run.data_dir, run.run_id, "fetch")
        return "x" * (65 * 1024 * 1024)

    run.step("fetch", fetch)
    return "fetched"


@agent("t-finally")
def finally_agent(run: Any, text: str) -> str:
    """Two questions inside try, and a counted release step in its finally."""
    try:
        run.ask(_colour(), key="first")
        run.ask(_colour(), key="second")
    finally:
        run.step("release", lambda: bump(run.data_dir, run.run_id, "release"))
    return "released"


@agent("t-each")
def each_agent(run: Any, text: str) -> str:
    """The colour asked of each of text's assignees on their own (`ask_each`), going on at text's quorum."""
    p = _params(text)
    bump(run.data_dir, run.run_id, "executions")
    got = run.ask_each(_colour(assignees=p.get("assignees", [])), quorum=p.get("quorum"))
    return " ".join(f"{user}={answer['colour']}" for user, answer in sorted(got.items()))


@agent("t-gate")
def gate_agent(run: Any, text: str) -> str:
    """Records a step, then (in-process tests only) waits at its gate before its next write."""
    made = run.step("bump", lambda: bump(run.data_dir, run.run_id, "step"))
    gate = GATES.pop(run.run_id, None)
    if gate is not None:
        REACHED.setdefault(run.run_id, threading.Event()).set()
        gate.wait(10)
    after = run.step("after", lambda: f"epoch {execution_of(run).epoch}")
    return f"{made} {after}"


@agent("t-many")
def many_agent(run: Any, text: str) -> str:
    """Asks `n` questions one after another, each under its own key."""
    picked = [run.ask(_colour(), key=f"colour-{i}")["colour"] for i in range(int(_params(text).get("n", 3)))]
    return " ".join(str(p) for p in picked)


@agent("t-reask")
def reask_agent(run: Any, text: str) -> str:
    """Asks the same key again until the answer is green."""
    while True:
        answer = run.ask(_colour(), key="colour")
        if answer["colour"] == "green":
            return "green at last"


@agent("t-flaky")
def flaky_agent(run: Any, text: str) -> str:
    """Records a step, then raises on its first `fail` executions (all of them until `fixed` is counted)."""
    p = _params(text)
    made = run.step("bump", lambda: bump(run.data_dir, run.run_id, "step"))
    n = bump(run.data_dir, run.run_id, "executions")
    limit = p.get("fail", 2)
    if limit == "always" and not count(run.data_dir, run.run_id, "fixed"):
        raise RuntimeError(f"still broken on execution {n}")
    if limit != "always" and n <= limit:
        raise RuntimeError(f"flaky on execution {n}")
    return f"ok after {n} executions, step {made}"


@agent("t-all-escalate")
def all_escalate_agent(run: Any, text: str) -> str:
    """Two questions at once (`ask_all`); the second is escalated to U9 after 30 s."""
    got = run.ask_all(
        {"a": _colour(assignees=["U1"]), "b": _colour(assignees=["U2"], escalate_after=30, escalate_to=["U9"])}
    )
    return f"{got['a']['colour']} {got['b']['colour']}"


@agent("t-each-facts")
def each_facts_agent(run: Any, text: str) -> str:
    """`t-each` bound to the facts in the data directory's `facts.json`, as read at each execution."""
    p = _params(text)
    facts = json.loads((run.data_dir / "facts.json").read_text())
    got = run.ask_each(_colour(assignees=p["assignees"]), key="each", context=facts)
    return " ".join(f"{user}={answer['colour']}" for user, answer in sorted(got.items()))
