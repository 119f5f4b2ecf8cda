"""The invariants every fault scenario must leave intact.

Checked from the outside, after the scenario, against three independent records: what Redis
holds (runs, journals, histories, questions), what the Web API stand-in received (its call
log and the messages as they are now), and the side-effect counter files the agents append
to outside Redis.

1. Each question has at most one accepted answer, and whoever gave it was asked.
2. Every accepted answer leads to exactly one completed resume: the run moves past the
   question (eventually: we poll with a deadline), the step after it ran once, and the run
   ended at most once.
3. Each `run.step` side effect happened once per run.
4. Each question was posted to Slack once (the stand-in's chat.postMessage calls carrying
   the question's block ids).
5. No run is stuck: it ended (succeeded; failed or expired with the reason posted;
   cancelled) or it is paused on a live question whose controls are showing.
6. Refused requests change nothing: `unchanged()` compares DUMPs of a run's keys.
7. Receipts: every closed question (answered, expired, cancelled) has its signed receipt, no
   receipt exists for a question that is not closed, each workspace's chain is whole:
   sequence numbers 1..n, each receipt naming the one before it, and the exported audit log
   verifies with the stack's key (`receipt_invariants`).

A scenario may declare a documented exception for one of its runs with `Expect`, e.g. a
step allowed to run twice because the worker was killed between its effect and its record.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import redis
from receipt_invariants import audit_violations, chain_violations, question_violations
from slack_forms import is_question
from slack_stack import RunRef, SlackStack

from faults.agents import count
from faults.conftest import Ledger
from workers.receipts import KeyRing, Signer
from workers.store.pieces import gathered

TERMINAL = frozenset({"succeeded", "failed", "cancelled", "expired"})
STEPS = ("prepare", "apply")
_QUESTION_BLOCK = re.compile(r"^(?:q|qa|qc|qh|qm|qt)\|([A-Za-z0-9_-]{1,64})\|")
DONE, FAILED = ":white_check_mark:", ":x: Failed"


@dataclass
class Expect:
    """Documented exceptions a scenario declares for one run."""

    repeated_steps: frozenset[str] = frozenset()  # killed between a step's effect and its record
    unlocked_ok: bool = False  # the bot died before it could lock the answered question
    reposted_ok: bool = False  # a Web API call that posted the question timed out on our side


@dataclass
class RunSnapshot:
    """Everything the checker reads about one run, decoded."""

    run_id: str
    run: dict[str, str]
    journal: dict[str, Any]
    history: list[dict[str, Any]]
    interrupts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return self.run.get("status", "")

    @property
    def agent(self) -> str:
        return self.run.get("agent", "")

    @property
    def conversation(self) -> dict[str, Any]:
        return json.loads(gathered(self.run, "conversation") or "{}")  # whole or in pieces


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def read_run(r: redis.Redis, run_id: str) -> RunSnapshot:
    run = {_s(k): _s(v) for k, v in r.hgetall(f"parley:run:{run_id}").items()}
    journal = {_s(k): json.loads(v) for k, v in r.hgetall(f"parley:run:{run_id}:journal").items()}
    history = [json.loads(x) for x in r.lrange(f"parley:run:{run_id}:history", 0, -1)]
    view = RunSnapshot(run_id, run, journal, history)
    iids = [iid for k, v in journal.items() if k.startswith("ask:") for iid in v]
    if run.get("interrupt"):
        iids.append(run["interrupt"])
    for iid in dict.fromkeys(iids):
        raw = {_s(k): _s(v) for k, v in r.hgetall(f"parley:interrupt:{iid}").items()}
        if raw:
            raw["assignees"] = json.loads(raw.get("assignees") or "[]")
            raw["answers"] = json.loads(raw.get("answers") or "[]")
            raw["message"] = json.loads(raw.get("message") or "{}")
        view.interrupts[iid] = raw
    return view


# ---- refused requests change nothing ------------------------------------------------------------
def run_keys(r: redis.Redis, run_id: str) -> list[str]:
    view = read_run(r, run_id)
    found = [f"parley:run:{run_id}", f"parley:run:{run_id}:journal", f"parley:run:{run_id}:history"]
    found += [f"parley:interrupt:{iid}" for iid in view.interrupts]
    conv = view.conversation
    if conv.get("thread_ts"):
        found.append(f"parley:thread:{conv['channel']}:{conv['thread_ts']}")
    return found


def _content(r: redis.Redis, key: str) -> Any:
    """A key's value, decoded by type: equal after an AOF reload even where DUMP bytes may differ."""
    kind = _s(r.type(key))
    if kind == "hash":
        return dict(r.hgetall(key))
    if kind == "list":
        return r.lrange(key, 0, -1)
    if kind == "zset":
        return r.zrange(key, 0, -1, withscores=True)
    if kind == "string":
        return r.get(key)
    return kind


def snapshot_run(r: redis.Redis, run_id: str, *, logical: bool = False) -> dict[str, Any]:
    """DUMPs of the run's own keys (their contents with `logical`), and its entries in every index."""
    view = read_run(r, run_id)
    read = (lambda k: _content(r, k)) if logical else r.dump
    snap: dict[str, Any] = {key: read(key) for key in run_keys(r, run_id)}
    for index in [f"status:{s}" for s in ("queued", "running", "paused", *TERMINAL)] + ["accepted", "leases", "runs"]:
        snap[f"idx:{index}"] = r.zscore(f"parley:idx:{index}", run_id)
    for iid, q in view.interrupts.items():
        for index in ("expiry", "remind"):
            snap[f"idx:{index}:{iid}"] = r.zscore(f"parley:idx:{index}", iid)
        for user in q.get("assignees", []):
            snap[f"idx:waiting:{user}:{iid}"] = r.zscore(f"parley:idx:waiting:{user}", iid)
    return snap


@contextmanager
def unchanged(r: redis.Redis, run_ids: Iterable[str], what: str, *, logical: bool = False) -> Iterator[None]:
    """Fail unless nothing Parley keeps about `run_ids` changed inside the block."""
    ids = list(run_ids)
    before = {run_id: snapshot_run(r, run_id, logical=logical) for run_id in ids}
    yield
    for run_id in ids:
        after = snapshot_run(r, run_id, logical=logical)
        changed = sorted(k for k in before[run_id].keys() | after.keys() if before[run_id].get(k) != after.get(k))
        assert not changed, f"{what} changed run {run_id}: {changed}"


# ---- the checker --------------------------------------------------------------------------------
class Checker:
    def __init__(self, stack: SlackStack, ledger: Ledger) -> None:
        self.stack = stack
        self.ledger = ledger
        assert stack.redis is not None
        self.r = stack.redis

    # -- reading the stand-in --
    def question_posts(self) -> Counter[str]:
        """Successful chat.postMessage calls per interrupt id found in their block ids."""
        posts: Counter[str] = Counter()
        for call in self.stack.ws.calls("chat.postMessage"):
            if call["status"] != 200 or call["error"] is not None:
                continue
            blocks = call["args"].get("blocks")
            iids = set()
            for block in blocks if isinstance(blocks, list) else []:
                m = _QUESTION_BLOCK.match(str(block.get("block_id", ""))) if isinstance(block, dict) else None
                if m:
                    iids.add(m.group(1))
            posts.update(iids)
        return posts

    def thread(self, view: RunSnapshot) -> list[dict[str, Any]]:
        conv = view.conversation
        if not conv.get("thread_ts"):
            return []
        return self.stack.ws.thread(conv["channel"], conv["thread_ts"])[1:]

    def live_question(self, view: RunSnapshot) -> bool:
        """Paused on an open question whose message, with its controls, is in the thread."""
        q = view.interrupts.get(view.run.get("interrupt", ""))
        if view.status != "paused" or not q or q.get("state") != "open":
            return False
        msg = q["message"]
        found = self.stack.ws.message(msg.get("channel", ""), msg.get("ts", "")) if msg.get("ts") else None
        return found is not None and is_question(found)

    def locked(self, view: RunSnapshot) -> bool:
        for q in view.interrupts.values():
            msg = q.get("message") or {}
            if q.get("state") in ("answered", "cancelled", "expired") and msg.get("ts"):
                found = self.stack.ws.message(msg["channel"], msg["ts"])
                if found is None or is_question(found):
                    return False
        return True

    # -- settling --
    def settled(self, view: RunSnapshot, expect: Expect) -> bool:
        done = view.status in TERMINAL or self.live_question(view)
        return done and (expect.unlocked_ok or self.locked(view))

    def settle(self, run_ids: list[str], expects: dict[str, Expect], timeout: float) -> dict[str, RunSnapshot]:
        deadline = time.monotonic() + timeout
        while True:
            views = {run_id: read_run(self.r, run_id) for run_id in run_ids}
            pending = [rid for rid, v in views.items() if not self.settled(v, expects.get(rid, Expect()))]
            if not pending or time.monotonic() > deadline:
                return views
            time.sleep(0.1)

    # -- the invariants --
    def violations(self, view: RunSnapshot, expect: Expect, posts: Counter[str]) -> list[str]:
        out: list[str] = []
        rid = view.run_id
        if not view.run:
            return [f"{rid}: the run record is missing"]
        history = view.history
        thread = self.thread(view)

        # 1. at most one accepted answer per question, by someone who was asked
        answered_events = Counter(h["detail"].get("interrupt_id") for h in history if h["event"] == "answered")
        for iid, q in view.interrupts.items():
            if not q:
                out.append(f"{rid}: question {iid} is in the journal but not in Redis")
                continue
            n = answered_events.get(iid, 0)
            if q["state"] == "answered":
                if n != 1:
                    out.append(f"{rid}: question {iid} was accepted {n} times")
                if q.get("answered_by") not in q["assignees"]:
                    out.append(f"{rid}: question {iid} answered by {q.get('answered_by')}, asked {q['assignees']}")
                event = next(
                    (h for h in history if h["event"] == "answered" and h["detail"].get("interrupt_id") == iid), None
                )
                if event and (event["by"] != q.get("answered_by") or event["detail"].get("answers") != q["answers"]):
                    out.append(f"{rid}: question {iid}'s history disagrees with its record")
            elif n:
                out.append(f"{rid}: question {iid} is {q['state']} but its history has {n} answers")

        # 2. an accepted answer leads to one completed resume
        # (a question's own expiry is an "expired" entry with its id; the run's end carries none)
        terminal = Counter(
            h["event"]
            for h in history
            if h["event"] in TERMINAL and not (h["event"] == "expired" and "interrupt_id" in h["detail"])
        )
        if any(n > 1 for n in terminal.values()) or len(terminal) > 1:
            out.append(f"{rid}: the run ended more than once: {dict(terminal)}")
        if view.status in TERMINAL and not terminal:
            out.append(f"{rid}: status {view.status} without its history entry")
        for iid, q in view.interrupts.items():
            if q and q.get("state") == "answered" and view.status in ("queued", "running"):
                out.append(f"{rid}: accepted answer to {iid} never resumed the run (still {view.status})")
            if q and q.get("state") == "answered" and view.status == "paused" and view.run.get("interrupt") == iid:
                out.append(f"{rid}: paused on {iid}, which was already answered")
        dones = [m for m in thread if m.get("text", "").startswith(DONE)]
        fails = [m for m in thread if m.get("text", "").startswith(FAILED)]
        if len(dones) > 1:
            out.append(f"{rid}: the final answer was posted {len(dones)} times")
        if view.status == "succeeded" and len(dones) != 1:
            out.append(f"{rid}: succeeded but {len(dones)} final answers were posted")
        if dones and fails:
            out.append(f"{rid}: both a final answer and a failure were posted")

        # 3. each step's side effect once
        if view.agent == "f-flow":
            data_dir = self.stack.data_dir
            for step in STEPS:
                n = count(data_dir, rid, f"step.{step}")
                allowed = 2 if step in expect.repeated_steps else 1
                if n > allowed:
                    out.append(f"{rid}: step {step!r} ran its side effect {n} times")
                if f"step:{step}" in view.journal and n < 1:
                    out.append(f"{rid}: step {step!r} is recorded but its side effect never happened")
            if view.status == "succeeded" and not all(f"step:{s}" in view.journal for s in STEPS):
                out.append(f"{rid}: succeeded without recording every step")

        # 4. each question posted once
        for iid, q in view.interrupts.items():
            n = posts.get(iid, 0)
            limit = 2 if expect.reposted_ok else 1
            if n > limit:
                out.append(f"{rid}: question {iid} was posted {n} times")
            if q and q.get("message", {}).get("ts") and n < 1:
                out.append(f"{rid}: question {iid} has a message ts but was never posted")

        # 5. not stuck
        if view.status in ("failed", "expired") and len(fails) != 1:
            out.append(
                f"{rid}: {view.status} with {len(fails)} failure messages posted (error {view.run.get('error')!r})"
            )
        if view.status not in TERMINAL and not self.live_question(view):
            q = view.interrupts.get(view.run.get("interrupt", ""), {})
            out.append(f"{rid}: stuck {view.status} (question {view.run.get('interrupt')!r} is {q.get('state')!r})")
        if not expect.unlocked_ok and not self.locked(view):
            out.append(f"{rid}: a closed question still shows its controls")
        out += receipt_violations(self.r, view)
        return out

    def check(
        self, runs: Iterable[RunRef | str], expects: dict[str, Expect] | None = None, timeout: float = 30.0
    ) -> None:
        """Wait (up to `timeout`) for the runs to settle, then assert every invariant."""
        ids = [r.run_id if isinstance(r, RunRef) else r for r in runs]
        expects = expects or {}
        views = self.settle(ids, expects, timeout)
        posts = self.question_posts()
        found: list[str] = []
        for run_id, view in views.items():
            found += self.violations(view, expects.get(run_id, Expect()), posts)
        found += chain_violations(self.r)
        found += audit_violations(self.r, signing_keys(self.stack))
        self.ledger.runs += len(ids)
        self.ledger.checks += len(ids) * 7
        if found:
            self.ledger.violations += found
            raise AssertionError(
                f"invariant violations (seed {self.ledger.seed}):\n  " + "\n  ".join(found) + f"\n{self.stack.logs()}"
            )


# ---- 7. receipts ---------------------------------------------------------------------------------
def receipt_violations(r: redis.Redis, view: RunSnapshot, timeout: float = 5.0) -> list[str]:
    """A closed question of the run without its receipt (after a few sweeps), or a receipt without its close."""
    return question_violations(r, {iid: q.get("state", "") for iid, q in view.interrupts.items()}, view.run_id, timeout)


def signing_keys(stack: SlackStack) -> KeyRing:
    """The public key of the stack's signing key (`conftest.receipt_key`), to verify its receipts with."""
    return KeyRing([Signer.from_pem((stack.data_dir / "receipt-key.pem").read_bytes()).public])
