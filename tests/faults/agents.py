"""Agents of the fault suite, with crash points a test arms per run: `PARLEY_AGENTS=slack_agents,faults.agents`.

Parameters come as JSON at the start of the run's text, as for `slack_agents`
(`{"crash": ["mid_step"], "work": 0.3} tag`): `crash` (points to arm), `work` (seconds each
step takes), `gate` (the first step waits for `<data_dir>/gates/<gate>`), `apply_gate` (the second
step touches `<gate>.inside`, then waits for its gate before its side effect), `assignees`,
`expires_in`, `reason`, `options` and `say` (a progress note after the answer). Side effects are counted in files under
the data directory, outside Redis, so an execution in a process that was SIGKILLed
still counts.

A crash point armed in `crash` stops the execution that reaches it first: it writes
its process id to `<data_dir>/crash/<run_id>.<point>` and sleeps until the test
SIGKILLs that worker. Replays find the marker and carry on. The points:

- `before_claim`: a worker took the run's job off the queue but has not claimed the run;
- `before_ask`: after the first step is recorded, before the question is opened;
- `after_post`: the question is posted and its `ts` recorded, the run is not parked yet;
- `after_answer`: the resumed execution has the accepted answer, before the next step;
- `mid_step`: inside the second step, before its side effect (the step is not recorded);
- `after_effect`: inside the second step, after its side effect, before it is recorded.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from effect_counters import bump
from effect_counters import count as count  # the suite reads the counts through this module
from slack_agents import params

from workers import agent
from workers.interaction import Item, ItemType, Request

CRASH_POINTS = ("before_claim", "before_ask", "after_post", "after_answer", "mid_step", "after_effect")
COLOURS = ["Red", "Green", "Blue"]
HANG = 60.0


def marker_path(data_dir: Path, run_id: str, point: str) -> Path:
    return data_dir / "crash" / f"{run_id}.{point}"


def crashpoint(point: str, text: str, run_id: str, data_dir: Path) -> None:
    """Hang here (to be SIGKILLed) if `point` is armed for this run and no execution reached it before.

    `text` is the run's: its parameters name the armed points.
    """
    if point not in params(text).get("crash", []):
        return
    marker = marker_path(data_dir, run_id, point)
    if marker.exists():
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(str(os.getpid()))
    tmp.rename(marker)
    time.sleep(HANG)


def wait_for_gate(path: Path, timeout: float = HANG) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def question(p: dict[str, Any]) -> Request:
    return Request(
        reason=p.get("reason", "Pick a colour"),
        items=[
            Item(id="colour", text="Colour", type=ItemType.SELECT, options=p.get("options", COLOURS)),
            Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False, multiline=True),
        ],
        assignees=p.get("assignees", []),
        expires_in=p.get("expires_in"),
    )


@agent("f-flow", description="Fault suite: a counted step, a question, a counted step, the answers")
def flow_agent(run: Any, text: str) -> str:
    p = params(text)
    work = float(p.get("work", 0))

    def effect(name: str) -> int:
        if name == "prepare" and p.get("gate"):
            wait_for_gate(run.data_dir / "gates" / str(p["gate"]))
        if name == "apply":
            crashpoint("mid_step", text, run.run_id, run.data_dir)
            if p.get("apply_gate"):  # say the step is under way, then wait for the test
                inside = run.data_dir / "gates" / f"{p['apply_gate']}.inside"
                inside.parent.mkdir(parents=True, exist_ok=True)
                inside.touch()
                wait_for_gate(run.data_dir / "gates" / str(p["apply_gate"]))
        time.sleep(work)
        made = bump(run.data_dir, run.run_id, f"step.{name}")
        if name == "apply":
            crashpoint("after_effect", text, run.run_id, run.data_dir)
        return made

    run.step("prepare", lambda: effect("prepare"))
    crashpoint("before_ask", text, run.run_id, run.data_dir)
    answers = run.ask(question(p))
    crashpoint("after_answer", text, run.run_id, run.data_dir)
    run.step("apply", lambda: effect("apply"))
    if p.get("say"):
        run.say(str(p["say"]))
    return f"colour {answers['colour']}, note {answers['note'] or '-'}"


def _install_after_post() -> None:
    """Wrap the Slack host's `solicit` so `after_post` can stop a worker right after a question is posted."""
    from bot.slack.host import SlackHost
    from workers.runtime import wiring
    from workers.runtime.host_view import HostView

    if getattr(SlackHost.solicit, "_fault_point", False):
        return
    original = SlackHost.solicit

    def solicit(self: SlackHost, request: Request, run: Any) -> Any:
        outcome = original(self, request, run)
        if isinstance(run, HostView):  # one question (an `ask_each` message is not a crash point)
            crashpoint("after_post", run.record.text, run.run_id, wiring.current().settings.data_dir)
        return outcome

    solicit._fault_point = True  # type: ignore[attr-defined]
    SlackHost.solicit = solicit  # type: ignore[method-assign]


def _install_before_claim() -> None:
    """Wrap the RQ job function so `before_claim` can stop a worker that dequeued a run's job but did not claim it."""
    from workers.runtime import jobs

    if getattr(jobs.execute, "_fault_point", False):
        return
    original = jobs.execute

    def execute(runtime: Any, run_id: str) -> str:
        record = runtime.store.find(run_id)
        if record is not None:
            crashpoint("before_claim", record.text, run_id, runtime.settings.data_dir)
        return original(runtime, run_id)

    execute._fault_point = True  # type: ignore[attr-defined]
    jobs.execute = execute  # type: ignore[assignment]


_install_after_post()
_install_before_claim()
