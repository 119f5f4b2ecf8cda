"""One message in the run's thread showing its plan, updated as the run goes, within Slack's limits.

The plan's tasks are kept in Redis (`SurfaceStore.plan`). So every execution and worker of the
run adds to the same plan. The message is posted when the run first names its steps (`run.plan`)
or records a step. Questions asked from then on get a card that links to them.

Updates are coalesced: the message changes at most once per `INTERVAL` seconds. chat.update is a
Tier 3 method, 50+ calls a minute per workspace
(https://docs.slack.dev/apis/web-api/rate-limits). A change inside the interval is shown by a
timer when it ends. Or a forced update shows it sooner, when the run parks, finishes, fails or
is cancelled. So the plan never stays behind. A post or update Slack did not take is tried again
an interval later, a few times: the run's end is often the plan's last change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient

from bot.slack.agent_surfaces import AgentSurfaces
from bot.slack.blocks_plan import plan_blocks, plan_text
from workers.interaction import RunInfo

INTERVAL = 3.0
"""Seconds between two updates of one plan message: 20 a minute, inside Tier 3's 50."""
RETRIES = 5
"""Times a plan's failed post or update is tried again, an interval apart: nothing else may."""
PLANNED = "plan"
"""The conversation's mark: False in a thread Parley started, True once the run has a plan.

A run whose mark is False has no plan, so its questions and its end read none. A conversation
without the mark (a thread from before it, or one Parley did not start) reads the plan as before.
"""
Plan = dict[str, Any]
Change = Callable[[Plan], bool]


def _new() -> Plan:
    return {"tasks": [], "message": None, "version": 0, "shown": 0, "shown_at": 0.0}


def _task(plan: Plan, task_id: str) -> dict[str, Any] | None:
    return next((t for t in plan["tasks"] if t["id"] == task_id), None)


def _claim(plan: Plan, task_id: str, title: str) -> dict[str, Any]:
    """The task `task_id`: the next named step not reached, or a new one titled `title`."""
    found = _task(plan, task_id)
    if found is not None:
        return found
    named = next((t for t in plan["tasks"] if t.get("named") and not t.get("reached")), None)
    if named is not None:
        named.update(id=task_id, reached=True)
        return named
    task = {"id": task_id, "title": title, "status": "pending", "reached": True}
    plan["tasks"].append(task)
    return task


class LivePlan:
    """Keeps each run's plan and message, thread-safe, at most one timer per run."""

    def __init__(
        self, surfaces: AgentSurfaces, planned: Callable[[RunInfo, dict[str, Any]], None], interval: float = INTERVAL
    ) -> None:
        self.surfaces = surfaces
        self.planned = planned  # records the conversation's mark turned True
        self.interval = interval
        self._lock = threading.Lock()
        self._timers: dict[str, threading.Timer] = {}

    # ---- what changed ----------------------------------------------------------------
    def named(self, web: WebClient, run: RunInfo, where: dict[str, str], steps: list[str]) -> None:
        """The agent named its steps ahead, as pending cards the run takes in order."""

        def change(plan: Plan) -> bool:
            if any(t.get("named") for t in plan["tasks"]):
                return False  # named by an earlier execution: the same names, already shown
            plan["tasks"] += [
                {"id": f"named-{n}", "title": s, "status": "pending", "named": True} for n, s in enumerate(steps)
            ]
            return True

        self._change(web, run, where, change, start=True)

    def step(self, web: WebClient, run: RunInfo, where: dict[str, str], key: str, status: str) -> None:
        def change(plan: Plan) -> bool:
            task = _claim(plan, f"step-{key}", key)
            if task["status"] == status:
                return False
            task["status"] = status
            return True

        self._change(web, run, where, change, start=True)

    def question(
        self, web: WebClient, run: RunInfo, where: dict[str, str], qid: str, title: str, status: str, link: str = ""
    ) -> None:
        """A question's card, only in a plan already shown.

        It opens `in_progress`, then shows how the question closed.
        """

        def change(plan: Plan) -> bool:
            task = _claim(plan, f"question-{qid}", title)
            if task["status"] == status and (task.get("link") or not link):
                return False
            task["status"] = status
            if link:
                task["link"] = link
            return True

        self._change(web, run, where, change, start=False, now=True)

    def ended(self, web: WebClient, run: RunInfo, where: dict[str, str], ok: bool) -> None:
        """The run ended, shown at once.

        A step still in progress completed (`ok`), or did not.
        """

        def change(plan: Plan) -> bool:
            open_tasks = [t for t in plan["tasks"] if t["status"] == "in_progress"]
            for t in open_tasks:
                t["status"] = "complete" if ok else "error"
            return bool(open_tasks) or plan["version"] > plan["shown"]

        self._change(web, run, where, change, start=False, now=True)

    def shown(self, run_id: str, where: dict[str, Any]) -> bool:
        """Whether the run has a plan (so its questions get cards)."""
        return where.get(PLANNED) is not False and self.surfaces.store.plan(run_id) is not None

    # ---- showing it ------------------------------------------------------------------
    def _change(
        self, web: WebClient, run: RunInfo, where: dict[str, str], change: Change, *, start: bool, now: bool = False
    ) -> None:
        """Apply `change` to the run's plan.

        It is shown now if due (or `now`), else when the interval ends. Without `start`, a run with no
        plan yet gets none.
        """
        if not start and where.get(PLANNED) is False:
            return  # the run has no plan, and none starts here
        with self._lock:
            plan = self.surfaces.store.plan(run.id)
            if plan is None and not start:
                return
            plan = plan or _new()
            if not change(plan):
                return
            if where.get(PLANNED) is False:
                self.planned(run, where)
            plan["version"] += 1
            wait = plan["shown_at"] + self.interval - time.time()
            if now or wait <= 0:
                self._show(web, run, where, plan)
            else:
                self._later(web, run, where, wait)
            self.surfaces.store.save_plan(run.id, plan)

    def _later(self, web: WebClient, run: RunInfo, where: dict[str, str], wait: float) -> None:
        if run.id in self._timers:
            return
        timer = threading.Timer(wait, self._due, args=(web, run, where))
        timer.daemon = True
        self._timers[run.id] = timer
        timer.start()

    def _due(self, web: WebClient, run: RunInfo, where: dict[str, str]) -> None:
        """The interval ended, so show any change since the message's last update."""
        with self._lock:
            self._timers.pop(run.id, None)
            plan = self.surfaces.store.plan(run.id)
            if plan is None or plan["version"] <= plan["shown"]:
                return
            self._show(web, run, where, plan)
            self.surfaces.store.save_plan(run.id, plan)

    def _show(self, web: WebClient, run: RunInfo, where: dict[str, str], plan: Plan) -> None:
        """Post or update the plan's message.

        A workspace without plans is left with none.
        """
        blocks = plan_blocks(run.agent, plan["tasks"], plan["version"])
        text = plan_text(run.agent, plan["tasks"])
        msg = plan.get("message")
        if msg is None:
            reply = self.surfaces.call(
                web, run, "chat.postMessage", surface="plan", channel=where["channel"], thread_ts=where["thread_ts"],
                text=text, blocks=blocks, unfurl_links=False, unfurl_media=False,
            )  # fmt: skip
            if reply is not None:
                plan["message"] = {"channel": reply["channel"], "ts": reply["ts"]}
        else:
            reply = self.surfaces.call(
                web, run, "chat.update", surface="plan", channel=msg["channel"], ts=msg["ts"], text=text, blocks=blocks
            )
        failed = plan.get("failed", 0) + 1
        if reply is None and self.surfaces.available(run, "plan") and failed <= RETRIES:
            plan["failed"] = failed  # not shown: a timer tries again, as for a change inside the interval
            self._later(web, run, where, self.interval)
            return
        plan["shown"], plan["shown_at"], plan["failed"] = plan["version"], time.time(), 0
