"""Walking an ask key's attempts is written once (`workers.runtime.attempts`): `run.ask`, `ask_all`
and `ask_each` count attempts, stop at the same limit and void an answer on changed facts alike."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from redis import Redis
from runtime_helpers import history_events, paused, runtime_and_host, start, work

from workers import agent
from workers.interaction import Answer, Item, ItemType, Request
from workers.runtime.acceptance import accept
from workers.store import ids
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FACTS: dict[str, Any] = {}
APPROVE = Request(
    reason="Approve?",
    items=[Item(id="decision", text="Decision", type=ItemType.SELECT, options=["approve", "reject"])],
)


@agent("t-walk-ask")
def walk_ask(run: Any, text: str) -> str:
    return str(run.ask(APPROVE, key="k", context=FACTS[run.run_id])["decision"])


@agent("t-walk-all")
def walk_all(run: Any, text: str) -> str:
    return str(run.ask_all({"k": APPROVE}, context={"k": FACTS[run.run_id]})["k"]["decision"])


@agent("t-walk-each")
def walk_each(run: Any, text: str) -> str:
    return str(run.ask_each(APPROVE, key="k", context=FACTS[run.run_id])["U1"]["decision"])


def _open_question(rt: Any, run_id: str) -> str:
    waiting = paused(rt, run_id)
    if not ids.is_group(waiting):
        return waiting
    group = rt.store.groups.group(waiting)
    return next(m.id for m in rt.store.groups.members(group) if m.state is InterruptState.OPEN)


@pytest.mark.parametrize("agent_name", ["t-walk-ask", "t-walk-all", "t-walk-each"])
def test_every_way_of_asking_voids_and_gives_up_alike(r: Redis, tmp_path: Path, agent_name: str) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, agent_name)
    FACTS[run_id] = {"version": "v1"}
    work(rt)
    for n in (2, 3, 4):
        iid = _open_question(rt, run_id)
        FACTS[run_id] = {"version": f"v{n}"}  # the answer below is given on facts that are then stale
        accept(rt, iid, "U1", [Answer(id="decision", choice="approve")])
        work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.FAILED
    assert record.error == "question 'k' was asked 3 times without a usable answer; giving up"
    assert [h.detail["fields"] for h in history_events(rt, run_id, "context changed")] == [["version"]] * 3


def test_only_the_walk_counts_attempts() -> None:
    """The count, the limit and the changed-facts flag are kept by `attempts.py` alone."""
    touches = re.compile(r"_key_calls\[|max_asks_per_key|_changed\[[^]]+\] =")
    home = ROOT / "workers" / "runtime" / "attempts.py"
    settings = ROOT / "workers" / "runtime" / "wiring.py"  # where the limit is defined
    found = [
        f"{p.name}:{n}"
        for p in sorted((ROOT / "workers").rglob("*.py"))
        if p not in (home, settings)
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if touches.search(line)
    ]
    assert found == []
