"""`run.recorded(key)`: a recorded step read without running it, on real Redis and RQ.

Before its step has run it is `ABSENT`, and it records nothing; after, it is the step's value
(a recorded None stays None). A replay after a pause reads the value the first execution recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from effect_counters import bump, count
from redis import Redis
from runtime_helpers import paused, runtime_and_host, start, work

from workers import ABSENT, AgentRun, agent
from workers.interaction import Answer, Item, ItemType, Request
from workers.runtime.acceptance import accept
from workers.store import journal_names
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
NAME = "t-run-recorded"


def _shown(value: Any) -> Any:
    return "ABSENT" if value is ABSENT else value


@agent(NAME, listed=False)
def probe(run: AgentRun, text: str) -> str:
    """Reads steps before and after they run; with "park" it asks once, so it replays after the answer."""
    data_dir = Path(text.split("|")[1])
    seen = {"before": _shown(run.recorded("fetch"))}
    run.step("fetch", lambda: {"n": bump(data_dir, run.run_id, "fetch")})
    seen["after"] = run.recorded("fetch")
    run.step("nothing", lambda: None)
    seen["none"] = _shown(run.recorded("nothing"))
    seen["never"] = _shown(run.recorded("never"))
    if text.startswith("park"):
        item = Item(id="ok", text="Go on?", type=ItemType.FREE_TEXT)
        run.ask(Request(reason="Go on?", items=[item]), key="go")
    return json.dumps(seen)


def test_a_step_is_absent_before_it_runs_and_its_value_after(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, NAME, f"once|{tmp_path}")
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "") == {"before": "ABSENT", "after": {"n": 1}, "none": None, "never": "ABSENT"}
    assert rt.store.journal_get(run_id, journal_names.step("never")) is None  # reading recorded nothing


def test_a_replay_reads_what_the_first_execution_recorded_and_runs_nothing(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, NAME, f"park|{tmp_path}")
    work(rt)
    accept(rt, paused(rt, run_id), "U1", [Answer(id="ok", free_text="yes")])
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "")["before"] == {"n": 1}  # the replay found the step recorded
    assert count(tmp_path, run_id, "fetch") == 1
