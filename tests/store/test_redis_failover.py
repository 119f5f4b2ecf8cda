"""Redis fails over under a live Parley: nothing accepted is lost, nothing is repeated, nothing restarts.

A real master, one replica and three Sentinels on loopback; a real `parley serve` and two
`parley worker`s reach them through `REDIS_URL=redis+sentinel://...` with
`PARLEY_REDIS_MIN_REPLICAS=1`. Runs of `s-effects` are parked on their question (each asked
of a person of its own, in a modal), people start submitting one after another, and the
master is killed with SIGKILL while they do. A person whose Submit is not acked as accepted
(the modal shows an error: Redis unreachable, or no replica confirmed) submits again, as the
message asks. The dead node comes back empty, as after losing its machine, and as a replica
of the new master with `replica-priority 0`, so that no failover promotes it before it holds
anything (tests/store/test_returning_node.py).

Receipts are signed (`PARLEY_RECEIPT_KEY`), and one more parked run is cancelled by an admin
before the failover: its receipt is the sweep's to write. Meanwhile an observer exports the
audit log again and again, as an auditor might. Afterwards every closed question has its
receipt on the new master, no receipt lacks its close, the chain is whole and verifies with
`parley audit verify`, and every receipt any export handed out is still in the chain, at its
place: none was lost with the old master. `--seed N` (the fault suite's option) varies when the
master is killed, who answers what, and the pace.
"""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from effect_counters import count
from faults.conftest import DEFAULT_SEED
from receipt_invariants import chain_violations, question_violations, states
from receipt_support import key_files
from redis_servers import Topology, have_redis_server
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import PARLEY, RunRef, SlackStack

from workers.receipts.export import export_lines
from workers.store import keys
from workers.store.connection import connect
from workers.store.receipt_replicas import ReceiptUnconfirmed
from workers.store.receipts import ReceiptBook
from workers.store.replication import Replication

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server (.ci/run installs it)"),
]

RUNS = 6
COLOURS = ["Red", "Green", "Blue"]
STAGGER = (0.3, 0.5)  # seconds between one person's first Submit and the next's, drawn by the seed
KILL_AT = (0.8, 1.3)  # seconds after the first Submit: about half the runs are answered before, half during
# The returning node syncs from the new master once started. A Sentinel held up for over 2 s on a
# loaded host enters TILT mode and acts on nothing for 30 s; the waits leave room for one such pause.
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


@dataclass
class Auditor:
    """Exports the audit log again and again, as `parley audit export` does, until told to stop.

    It keeps every receipt an export handed out, by its place, and counts the exports refused
    because no replica held the chain's head yet.
    """

    url: str
    handed: dict[tuple[str, int], str] = field(default_factory=dict)  # (workspace, sequence) -> digest
    forks: list[str] = field(default_factory=list)
    refused: int = 0
    unreachable: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        book = ReceiptBook(connect(self.url, socket_timeout=2), replication=Replication(1))
        while not self.stop.wait(0.3):
            try:
                lines = [json.loads(line) for line in export_lines(book)]
            except ReceiptUnconfirmed:
                self.refused += 1
                continue
            except redis.RedisError:
                self.unreachable += 1
                continue
            for line in lines:
                place, digest = (line["workspace"], line["sequence"]), line["digest"]["sha256"]
                if self.handed.setdefault(place, digest) != digest:
                    self.forks.append(f"{place}: {self.handed[place]} then {digest}")


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """The fault suite's `--seed`, or its default."""
    chosen = request.config.getoption("--seed")
    return DEFAULT_SEED if chosen is None else int(chosen)


def test_sentinel_failover_loses_no_accepted_answer_nor_receipt_and_repeats_no_effect(
    topology: Topology, tmp_path: Path, seed: int
) -> None:
    assert topology.master is not None
    old_master, replica = topology.master, topology.replica_servers[0]
    rng = random.Random(f"{seed}:failover")
    _, key, public = key_files(tmp_path)
    env = {
        "PARLEY_REDIS_MIN_REPLICAS": "1",
        "PARLEY_AGENTS": "slack_agents,ha_agents",
        "PARLEY_REQUEUE_GRACE": "2",
        "PARLEY_RECEIPT_KEY": str(key),
    }
    stack = SlackStack(topology.url(0), tmp_path / "stack", workers=2, extra_env=env).start()
    auditor = Auditor(topology.url(0))
    watching = threading.Thread(target=auditor.run, daemon=True)
    try:
        people = []
        for n in range(RUNS):
            user = f"U0HA{n:02d}"
            run = stack.start_run("s-effects", json.dumps({"assignees": [user]}) + f" failover-{n}", user=user)
            people.append(Person(run, user, rng.choice(COLOURS), open_form(stack, run, user)))
        cancelled = stack.start_run("s-effects", json.dumps({"assignees": ["U0HAXX"]}) + " failover-cancel")
        stack.question(cancelled)
        stopped = subprocess.run(
            [str(PARLEY), "runs", "cancel", cancelled.run_id], env=stack.env(), capture_output=True, text=True
        )
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        pids = [p.pid for p in stack.procs]
        watching.start()

        stagger, kill_at = rng.uniform(*STAGGER), rng.uniform(*KILL_AT)
        first = time.monotonic() + 0.2
        deadline = first + ANSWERING
        threads = [
            threading.Thread(target=p.answer, args=(stack, first + n * stagger, deadline), daemon=True)
            for n, p in enumerate(people)
        ]
        for t in threads:
            t.start()
        time.sleep(max(0.0, first + kill_at - time.monotonic()))
        old_master.kill()  # SIGKILL: a crash, nothing more is written or sent to the replica
        killed_at = time.monotonic()

        # Sentinel promotes the replica ...
        topology.wait_sentinels_agree(replica.port, timeout=60)  # room for one TILT pause (above)
        promoted = replica.client()
        assert promoted.execute_command("ROLE")[0] == b"master"
        promoted.close()
        # Until a replica joins it, the new master confirms nothing: answers are kept unconfirmed
        # and their people asked to submit again, and no export hands out the chain's head.
        unconfirmed = time.monotonic() + 60
        while not (auditor.refused and any("could not confirm" in r for p in people for r in p.refusals)):
            assert time.monotonic() < unconfirmed, ([p.refusals for p in people], auditor.refused, auditor.unreachable)
            time.sleep(0.1)
        # ... and the dead node comes back empty, as the new master's replica.
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

        # Receipts: every closed question has its own on the new master (the cancelled run's is the
        # sweep's to write), none lacks its close, the chain is whole, and it verifies offline.
        asked = [new_master.hget(keys.run(r.run_id), "interrupt").decode() for r in [p.run for p in people]]
        asked.append(new_master.hget(keys.run(cancelled.run_id), "interrupt").decode())
        found = question_violations(new_master, states(new_master, asked), "failover", timeout=10)
        assert found + chain_violations(new_master) == [], stack.logs()
        audit = tmp_path / "audit.jsonl"
        exported = subprocess.run([str(PARLEY), "audit", "export"], env=stack.env(), capture_output=True, text=True)
        assert exported.returncode == 0, exported.stderr
        audit.write_text(exported.stdout)
        verified = subprocess.run(
            [str(PARLEY), "audit", "verify", str(audit), "--keys", str(public)], capture_output=True, text=True
        )
        assert verified.stdout == f"ok: {RUNS + 1} receipts verified, every chain intact\n", verified.stdout
        # Every receipt an export handed out, before, during or after the failover, is still there.
        auditor.stop.set()
        watching.join(timeout=30)
        lines = [json.loads(line) for line in audit.read_text().splitlines()]
        final = {(line["workspace"], line["sequence"]): line["digest"]["sha256"] for line in lines}
        assert auditor.handed and not auditor.forks, auditor.forks
        assert {place: final.get(place) for place in auditor.handed} == auditor.handed
        print(
            f"failover: seed {seed}, master killed {kill_at:.2f} s after the first Submit; exports handed out "
            f"{len(auditor.handed)} receipts, {auditor.refused} refused while no replica held the chain; "
            f"chains gone back: {len(ReceiptBook(new_master).rewinds())}"
        )

        # The bot and the workers rode it out: the same processes, none restarted.
        assert [p.pid for p in stack.procs] == pids
        assert all(p.poll() is None for p in stack.procs), stack.logs()
        new_master.close()
    finally:
        auditor.stop.set()
        stack.stop()
