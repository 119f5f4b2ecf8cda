"""`ReceiptBook`: signs closed questions' receipts and keeps each workspace's chain in Redis.

A closing step (`scripts.CLOSE`, `group_scripts.CLOSE_MEMBER`) marks the question in
`receipts_pending`, in the same atomic write as the close. `write` turns that mark into
a signed receipt exactly once. It reads the chain's head, signs, and commits the receipt,
the new head and the unmarking in one MULTI, retried when another writer moved the head
meanwhile (WATCH). Whoever needs the receipt first writes it: the worker resuming the run,
the webhook delivery, the sweep, the API.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.exceptions import WatchError

from workers.logs import Log
from workers.receipts.canonical import canonical, sha256
from workers.receipts.dsse import sign
from workers.receipts.keys import KeyRing, Signer, public_pem
from workers.receipts.statement import statement
from workers.store import keys
from workers.store.pieces import gathered
from workers.store.records import InterruptRecord, InterruptState
from workers.store.replies import reply

log = Log("parley.receipts")
CLOSED = (InterruptState.ANSWERED, InterruptState.EXPIRED, InterruptState.CANCELLED)
DEFAULT_RETENTION = 365 * 86400.0
NO_WORKSPACE = "-"  # the chain of questions asked where there are no workspaces (the terminal)


@dataclass(frozen=True)
class Receipt:
    """One stored receipt: the DSSE envelope, the digest of its payload, its place in its chain."""

    interrupt_id: str
    envelope: dict[str, Any]
    digest: str
    workspace: str
    sequence: int
    run_id: str = ""  # the run it was asked in; for the HTTP API, the question's own id

    def line(self) -> dict[str, Any]:
        """The receipt as one line of an audit log, and as the API serves it."""
        return {
            "question_id": self.interrupt_id,
            "run_id": self.run_id,
            "workspace": self.workspace,
            "sequence": self.sequence,
            "digest": {"sha256": self.digest},
            "envelope": self.envelope,
        }

    @classmethod
    def from_hash(cls, interrupt_id: str, data: dict[str, str]) -> Receipt:
        return cls(
            interrupt_id=interrupt_id,
            envelope=json.loads(data["envelope"]),
            digest=data["digest"],
            workspace=data["workspace"],
            sequence=int(data["sequence"]),
            run_id=data.get("run_id", ""),
        )


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class ReceiptBook:
    """Reading receipts needs only Redis; writing them needs the `signer` too."""

    def __init__(
        self,
        redis: Redis,
        signer: Signer | None = None,
        retention: float = DEFAULT_RETENTION,
        trusted: KeyRing | None = None,
    ) -> None:
        self.redis = redis
        self.signer = signer
        self.retention = retention
        self.trusted = trusted or KeyRing()  # public keys of rotated signers, from `PARLEY_RECEIPT_KEYS`

    # ---- reading ---------------------------------------------------------------
    def get(self, interrupt_id: str) -> Receipt | None:
        data = reply(self.redis.hgetall(keys.receipt(interrupt_id)))
        return Receipt.from_hash(interrupt_id, {_s(k): _s(v) for k, v in data.items()}) if data else None

    def digests(self, interrupt_ids: list[str]) -> dict[str, str]:
        """The digest of each of these questions' receipts that exists, in one round trip."""
        ids = list(dict.fromkeys(interrupt_ids))
        pipe = self.redis.pipeline(transaction=False)
        for iid in ids:
            pipe.hget(keys.receipt(iid), "digest")
        return {iid: _s(d) for iid, d in zip(ids, pipe.execute(), strict=True) if d is not None}

    def signing(self) -> bool:
        """Whether receipts are signed here: this process holds the key, or a worker has signed with one."""
        return self.signer is not None or bool(self.redis.exists(keys.receipt_keys()))

    def pending(self, interrupt_id: str) -> bool:
        return self.redis.zscore(keys.receipts_pending(), interrupt_id) is not None

    def keyring(self) -> KeyRing:
        """Every key that signed a receipt here, and the signer's own."""
        pems = b"".join(_s(p).encode() for p in reply(self.redis.hvals(keys.receipt_keys())))
        ring = KeyRing.from_pem_text(pems) if pems else KeyRing()
        ring.merge(self.trusted)
        if self.signer is not None:
            ring.add(self.signer.public)
        return ring

    def workspaces(self) -> list[str]:
        return sorted(_s(w) for w in reply(self.redis.smembers(keys.receipt_workspaces())))

    def chain(self, workspace: str, batch: int = 500) -> Iterator[Receipt]:
        """A workspace's receipts in chain order; ones past retention are gone from its start."""
        start = 0
        while True:
            ids = [_s(i) for i in reply(self.redis.zrange(keys.receipt_chain(workspace), start, start + batch - 1))]
            if not ids:
                return
            pipe = self.redis.pipeline(transaction=False)
            for iid in ids:
                pipe.hgetall(keys.receipt(iid))
            for iid, data in zip(ids, pipe.execute(), strict=True):
                if data:
                    yield Receipt.from_hash(iid, {_s(k): _s(v) for k, v in data.items()})
                else:  # expired with retention: the chain starts after it now
                    self.redis.zrem(keys.receipt_chain(workspace), iid)
                    start -= 1
            start += batch

    # ---- writing ---------------------------------------------------------------
    def write(self, interrupt_id: str) -> Receipt | None:
        """The question's receipt, signed and chained now if it was not yet; None when it cannot have one
        (no signer, no such question, or not closed)."""
        while True:
            try:
                return self._write_once(interrupt_id)
            except WatchError:  # another writer moved the chain's head, or wrote this receipt: read again
                continue

    def _write_once(self, interrupt_id: str) -> Receipt | None:
        """One attempt, in four round trips: read the closed question, WATCH, read the head, MULTI/EXEC.

        The question is read before the WATCH: once closed, nothing it says changes.
        """
        if self.signer is None:
            return self.get(interrupt_id)
        reads = self.redis.pipeline(transaction=False)
        reads.hgetall(keys.interrupt(interrupt_id))
        reads.zscore(keys.receipts_pending(), interrupt_id)
        raw, closed_at = reads.execute()
        if not raw:
            self.redis.zrem(keys.receipts_pending(), interrupt_id)
            return self.get(interrupt_id)
        question = InterruptRecord.from_hash({_s(k): _s(v) for k, v in raw.items()})
        if question.state not in CLOSED:
            return None
        closed = float(closed_at) if closed_at is not None else (question.answered_at or time.time())
        workspace = question.team or question.enterprise or NO_WORKSPACE
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.watch(keys.receipt(interrupt_id), keys.receipt_head(workspace))
            reads = self.redis.pipeline(transaction=False)  # read after the WATCH, in one round trip
            reads.exists(keys.receipt(interrupt_id))
            reads.hgetall(keys.receipt_head(workspace))
            reads.hgetall(keys.run(question.run_id))  # the conversation may be kept in pieces
            exists, head_raw, run_hash = reads.execute()
            if exists:
                return self.get(interrupt_id)
            head = {_s(k): _s(v) for k, v in head_raw.items()}
            run_raw = gathered({_s(k): _s(v) for k, v in run_hash.items()}, "conversation")
            conversation = json.loads(run_raw) if run_raw else {}
            sequence = int(head.get("sequence", "0")) + 1
            body = statement(
                question, conversation, sequence=sequence, previous=head.get("digest") or None, closed_at=closed
            )
            payload = canonical(body)
            digest = sha256(payload)
            envelope = sign(payload, self.signer)
            pipe.multi()
            pipe.hset(
                keys.receipt(interrupt_id),
                mapping={
                    "envelope": json.dumps(envelope),
                    "digest": digest,
                    "workspace": workspace,
                    "sequence": str(sequence),
                    "run_id": question.run_id,
                },
            )
            if self.retention > 0:
                pipe.expire(keys.receipt(interrupt_id), int(self.retention))
            pipe.hset(
                keys.receipt_head(workspace),
                mapping={"digest": digest, "sequence": str(sequence), "question_id": interrupt_id},
            )
            pipe.zadd(keys.receipt_chain(workspace), {interrupt_id: sequence})
            pipe.sadd(keys.receipt_workspaces(), workspace)
            pipe.hset(keys.receipt_keys(), self.signer.keyid, public_pem(self.signer.public))
            pipe.zrem(keys.receipts_pending(), interrupt_id)
            pipe.execute()
        log.info("receipt written", run_id=question.run_id, interrupt_id=interrupt_id, team=question.team)
        return Receipt(interrupt_id, envelope, digest, workspace, sequence, question.run_id)

    def questions_of(self, run_id: str) -> list[str]:
        """The question (or the questions asked at once) run `run_id` is, or was last, parked on."""
        parked = reply(self.redis.hget(keys.run(run_id), "interrupt"))
        if not parked:
            return []
        members = reply(self.redis.hget(keys.group(_s(parked)), "members"))
        return list(json.loads(members)) if members else [_s(parked)]

    def of_run(self, run_id: str) -> list[Receipt]:
        """The receipts of the question(s) `run_id` was parked on, written now when they are due."""
        found = []
        for iid in self.questions_of(run_id):
            receipt = self.get(iid)
            if receipt is None and self.signer is not None and self.pending(iid):
                receipt = self.write(iid)
            if receipt is not None:
                found.append(receipt)
        return found

    def write_for_run(self, run_id: str) -> list[Receipt]:
        """Write the pending receipts of the question (or the group of questions) `run_id` was parked on.

        The worker calls this before it resumes a run, so no run goes on from an answer
        that has no receipt (when a signer is configured).
        """
        if self.signer is None:
            return []
        ids = self.questions_of(run_id)
        pipe = self.redis.pipeline(transaction=False)
        for iid in ids:
            pipe.zscore(keys.receipts_pending(), iid)
        due = [iid for iid, score in zip(ids, pipe.execute(), strict=True) if score is not None]
        return [r for r in (self.write(iid) for iid in due) if r is not None]

    def sweep(self, now: float, keep_unsigned: float) -> int:
        """The sweep's part: write every pending receipt; without a signer, forget marks older than
        `keep_unsigned` seconds (their questions are gone with retention). How many were written."""
        if self.signer is None:
            if keep_unsigned > 0:
                self.redis.zremrangebyscore(keys.receipts_pending(), "-inf", now - keep_unsigned)
            return 0
        return self.write_pending()

    def write_pending(self, limit: int = 200, older_than: float = 0.0) -> int:
        """Write the receipts still pending (oldest first, closed `older_than` seconds ago); how many."""
        top = time.time() - older_than
        found = reply(self.redis.zrangebyscore(keys.receipts_pending(), "-inf", top, start=0, num=limit))
        ids = [_s(i) for i in found]
        written = 0
        for iid in ids:
            if self.write(iid) is not None:
                written += 1
        return written
