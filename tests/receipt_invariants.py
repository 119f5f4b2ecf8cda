"""The receipts' invariant, checked from the outside on whatever Redis a test holds (the fault
suite's seventh, and the failover tests').

Every closed question (answered, expired, cancelled) has its receipt, no receipt exists for a
question that is not closed, each workspace's chain is whole (sequences 1..n, each naming the
digest of the one before), and every receipt of the audit log verifies with the deployment's
public key, as `parley audit verify` checks it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from workers.receipts import KeyRing, ReceiptError
from workers.receipts.verify import statement_of, verify_log
from workers.store.receipts import Receipt

CLOSED = ("answered", "expired", "cancelled")


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def states(r: redis.Redis, interrupt_ids: list[str]) -> dict[str, str]:
    """Each question's state as Redis holds it ('' for one it does not hold)."""
    return {iid: _s(r.hget(f"parley:interrupt:{iid}", "state") or b"") for iid in interrupt_ids}


def question_violations(r: redis.Redis, questions: dict[str, str], owner: str, timeout: float = 5.0) -> list[str]:
    """A closed question without its receipt (after a few sweeps), or a receipt without its close.

    `questions` maps question ids to their states; `owner` (a run id) starts each line.
    """
    out: list[str] = []
    for iid, state in questions.items():
        deadline = time.monotonic() + timeout
        while state in CLOSED and not r.exists(f"parley:receipt:{iid}") and time.monotonic() < deadline:
            time.sleep(0.1)  # a cancel's receipt is the sweep's to write
        has = bool(r.exists(f"parley:receipt:{iid}"))
        if state in CLOSED and not has:
            out.append(f"{owner}: question {iid} is {state} without its receipt")
        if has and state not in CLOSED:
            out.append(f"{owner}: a receipt for question {iid}, which is {state!r}")
    return out


def chain_violations(r: redis.Redis) -> list[str]:
    """Each workspace's chain: sequences 1..n in order, each receipt naming the digest of the one before."""
    out: list[str] = []
    for workspace in sorted(_s(w) for w in r.smembers("parley:receipts:workspaces")):
        previous, expected = None, 1
        for iid, score in r.zrange(f"parley:receipts:chain:{workspace}", 0, -1, withscores=True):
            raw = {_s(k): _s(v) for k, v in r.hgetall(f"parley:receipt:{_s(iid)}").items()}
            predicate = statement_of(json.loads(raw.get("envelope") or "{}")).get("predicate", {})
            named = (predicate.get("previous") or {}).get("sha256")
            if int(score) != expected or predicate.get("sequence") != expected or named != previous:
                out.append(f"workspace {workspace}: receipt {_s(iid)} breaks the chain at {expected}")
                break
            previous, expected = raw.get("digest"), expected + 1
    return out


def audit_lines(r: redis.Redis) -> list[str]:
    """Each workspace's chain as `parley audit export` writes it, read without changing anything
    (the export drops a chain's entries whose receipt is gone; a checker must not)."""
    lines = []
    for workspace in sorted(_s(w) for w in r.smembers("parley:receipts:workspaces")):
        for iid in r.zrange(f"parley:receipts:chain:{workspace}", 0, -1):
            raw = {_s(k): _s(v) for k, v in r.hgetall(f"parley:receipt:{_s(iid)}").items()}
            if raw:
                lines.append(json.dumps(Receipt.from_hash(_s(iid), raw).line(), separators=(",", ":")))
    return lines


def audit_violations(r: redis.Redis, ring: KeyRing) -> list[str]:
    """The audit log, checked as `parley audit verify` checks it: every signature, every link."""
    try:
        verify_log(audit_lines(r), ring)
    except ReceiptError as exc:
        return [f"audit verify: {exc}"]
    return []
