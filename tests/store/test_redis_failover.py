"""Redis fails over under a live Parley: nothing accepted is lost, nothing is repeated, nothing restarts.

A real master, one replica and three Sentinels on loopback; a real `parley serve` and two
`parley worker`s reach them through `REDIS_URL=redis+sentinel://...` with
`PARLEY_REDIS_MIN_REPLICAS=1`. Runs of `s-effects` are parked on their question (each asked
of a person of its own, in a modal), people start submitting one after another, and the
master is killed with SIGKILL while they do. A person whose Submit is not acked as accepted
(the modal shows an error: Redis unreachable, or no replica confirmed) submits again, as the
message asks. The dead node comes back empty, as after losing its machine (with
`replica-priority 0`, so that no failover promotes it before it holds anything), and Sentinel
makes it the new master's replica.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from effect_counters import count
from redis_servers import Topology, have_redis_server, scratch_dir
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import PARLEY, RunRef, SlackStack

from workers.store import keys

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server (.ci/run installs it)"),
]

RUNS = 6
COLOURS = ["Red", "Green", "Blue"]
STAGGER = 0.4  # seconds between one person's first Submit and the next's
KILL_AT = 1.0  # seconds after the first Submit: runs 0-2 are answered before, 3-5 during the failover
# Sentinel turns the returning node into a replica at an INFO reply (every 10 s) once the node has
# reported itself master for 8 s: 10-20 s here. A Sentinel held up for over 2 s on a loaded host
# enters TILT mode and acts on nothing for 30 s; the waits leave room for one such pause.
REJOIN_TIMEOUT = 90.0
ANSWERING = 150.0  # seconds people keep submitting, from the first Submit: past the node's rejoining


@dataclass
class Person:
    """One assignee answering their run's question in a modal, submitting until told it was accepted."""

    run: RunRef
    user: str
    colour: str
    view: dict[str, Any]
    refusals: list[str] = field(default_factory=list)
    accepted_at: float | None = None  # monotonic time of the Submit acked as accepted

    def answer(self, stack: SlackStack, start_at: float, deadline: float) -> None:
        time.sleep(max(0.0, start_at - time.monotonic()))
        state = form_state(self.view["blocks"], {"Colour": self.colour})
        while time.monotonic() < deadline:
            payload = view_submission_payload(user=self.user, view=self.view, state_values=state)
            try:
                resp = stack.interact(payload)
            except httpx.HTTPError as exc:
                self.refusals.append(f"http: {exc}")
            else:
                if resp.status_code == 200 and resp.text == "":
                    self.accepted_at = time.monotonic()
                    return
                self.refusals.append(f"{resp.status_code}: {resp.text[:200]}")
            time.sleep(0.25)


def open_form(stack: SlackStack, run: RunRef, user: str) -> dict[str, Any]:
    """`user` clicks "Answer in a form" on the run's question; returns the modal Slack opened."""
    question = stack.question(run)
    block, button = find_element(question["blocks"], "parley_open_form")
    trigger = stack.ws.issue_trigger(user)
    mark = stack.mark()
    payload = block_actions_payload(
        user=user, message=question, channel=run.channel, action=button_action(block, button), trigger=trigger
    )
    assert stack.interact(payload).status_code == 200
    stack.wait_call("views.open", lambda c: c["args"].get("trigger_id") == trigger, since=mark)
    [view] = stack.ws.open_views(user)
    return view


@pytest.fixture
def topology(tmp_path: Path) -> Iterator[Topology]:
    with scratch_dir(tmp_path / "redis-logs") as workdir:
        ha = Topology(workdir, replicas=1, sentinels=3, down_after_ms=1000, failover_timeout_ms=3000).start()
        try:
            yield ha
        finally:
            ha.stop()


def test_sentinel_failover_loses_no_accepted_answer_and_repeats_no_effect(topology: Topology, tmp_path: Path) -> None:
    assert topology.master is not None
    old_master, replica = topology.master, topology.replica_servers[0]
    env = {
        "PARLEY_REDIS_MIN_REPLICAS": "1",
        "PARLEY_AGENTS": "slack_agents,ha_agents",
        "PARLEY_REQUEUE_GRACE": "2",
    }
    stack = SlackStack(topology.url(0), tmp_path / "stack", workers=2, extra_env=env).start()
    try:
        people = []
        for n in range(RUNS):
            user = f"U0HA{n:02d}"
            run = stack.start_run("s-effects", json.dumps({"assignees": [user]}) + f" failover-{n}", user=user)
            people.append(Person(run, user, COLOURS[n % len(COLOURS)], open_form(stack, run, user)))
        pids = [p.pid for p in stack.procs]

        first = time.monotonic() + 0.2
        deadline = first + ANSWERING
        threads = [
            threading.Thread(target=p.answer, args=(stack, first + n * STAGGER, deadline), daemon=True)
            for n, p in enumerate(people)
        ]
        for t in threads:
            t.start()
        time.sleep(max(0.0, first + KILL_AT - time.monotonic()))
        old_master.kill()  # SIGKILL: a crash, nothing more is written or sent to the replica
        killed_at = time.monotonic()

        # Sentinel promotes the replica ...
        topology.wait_sentinels_agree(replica.port, timeout=30)
        promoted = replica.client()
        assert promoted.execute_command("ROLE")[0] == b"master"
        promoted.close()
        # ... and the dead node comes back empty; Sentinel makes it the new master's replica.
        topology.restart_as_empty(old_master)
        topology.wait_replicas(replica, 1, timeout=REJOIN_TIMEOUT)
        for t in threads:
            t.join(timeout=max(1.0, deadline - time.monotonic()))
        stuck = [p.user for p in people if p.accepted_at is None]
        assert not stuck, f"never told accepted: {stuck}\n{stack.logs()}\n{topology.logs()}"

        # Answers kept arriving through the failover: some people were told to submit again,
        # and some parked runs were answered only after the master was gone.
        assert any(p.refusals for p in people), "no Submit met the failover; the test did not exercise it"
        assert any(p.accepted_at is not None and p.accepted_at > killed_at for p in people)
        # Until the returning node had synced, the new master had no replica to confirm answers:
        # they were kept unconfirmed and their people asked to submit again.
        assert any("could not confirm" in r for p in people for r in p.refusals), [p.refusals for p in people]

        for p in people:
            stack.wait_status(p.run, "succeeded", "failed", timeout=60)
        new_master = replica.client()
        for p in people:
            run_key = keys.run(p.run.run_id)
            status, result, iid = (
                (v or b"").decode() for v in new_master.hmget(run_key, ["status", "result", "interrupt"])
            )
            # Every answer told "accepted" is there after the failover, as given, by whom it was given.
            assert (status, result) == ("succeeded", f"colour {p.colour}"), (p.user, status, result, p.refusals)
            answered_by, answers = new_master.hmget(keys.interrupt(iid), ["answered_by", "answers"])
            assert answered_by == p.user.encode()
            assert {a["id"]: a.get("choice") for a in json.loads(answers)}["colour"] == p.colour
            history = [json.loads(e)["event"] for e in new_master.lrange(keys.history(p.run.run_id), 0, -1)]
            assert history.count("answered") == 1, history
            # No side effect was repeated, before the question or after it.
            assert count(stack.data_dir, p.run.run_id, "before") == 1, p.user
            assert count(stack.data_dir, p.run.run_id, "after") == 1, p.user
        finals = [m for p in people for m in stack.replies(p.run, lambda m: m["text"].startswith(":white_check_mark:"))]
        assert len(finals) == RUNS  # each run told its result once

        # The CLI reaches the promoted master through the same URL.
        shown = subprocess.run(
            [str(PARLEY), "runs", "show", people[-1].run.run_id], env=stack.env(), capture_output=True, text=True
        )
        assert shown.returncode == 0 and "status succeeded" in shown.stdout, shown.stdout + shown.stderr

        # The bot and the workers rode it out: the same processes, none restarted.
        assert [p.pid for p in stack.procs] == pids
        assert all(p.poll() is None for p in stack.procs), stack.logs()
        new_master.close()
    finally:
        stack.stop()
