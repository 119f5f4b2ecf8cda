"""`ReceiptBook`: signs closed questions' receipts and keeps each workspace's chain in Redis.

A closing step marks the question in `receipts_pending`, in the close's own atomic write. The
steps are `scripts.CLOSE` and `group_scripts.CLOSE_MEMBER`. `write` turns that mark into a
signed receipt exactly once. It reads the chain's head and signs. It commits the receipt, the
new head and the unmarking in one MULTI. It retries when another writer moved the head meanwhile
(WATCH). Whoever needs the receipt first writes it. That is the worker resuming the run, the
webhook delivery, the sweep or the API. A receipt is handed out through `issued`, which waits
for replicas first (`workers.store.receipt_replicas`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import RedisError, WatchError

from workers import metrics
from workers.logs import Log
from workers.receipts.canonical import canonical, sha256
from workers.receipts.dsse import sign
from workers.receipts.keys import KeyRing, Signer, public_pem
from workers.receipts.statement import statement
from workers.store import keys
from workers.store.pieces import gathered
from workers.store.receipt_chains import ChainReader, head_from_index
from workers.store.receipt_records import Receipt as Receipt
from workers.store.receipt_records import pairs
from workers.store.receipt_replicas import (
    REWINDS_KEPT,
    TOUCH,
    ChainHeads,
    Place,
    ReceiptUnconfirmed,
    confirmed,
    lost_place,
    read_watched,
    rewind_note,
)
from workers.store.records import InterruptRecord, InterruptState
from workers.store.replication import Replication
from workers.store.replies import as_text, reply, text_hash

log = Log("parley.receipts")
CLOSED = (InterruptState.ANSWERED, InterruptState.EXPIRED, InterruptState.CANCELLED)
DEFAULT_RETENTION = 365 * 86400.0
NO_WORKSPACE = "-"  # the chain of questions asked where there are no workspaces (the terminal)


class ReceiptBook:
    """Reading receipts needs only Redis, and writing also needs the `signer`."""

    def __init__(
        self,
        redis: Redis,
        signer: Signer | None = None,
        retention: float = DEFAULT_RETENTION,
        trusted: KeyRing | None = None,
        replication: Replication | None = None,
    ) -> None:
        self.redis = redis
        self.signer = signer
        self.retention = retention
        self.trusted = trusted or KeyRing()  # public keys of rotated signers, from `PARLEY_RECEIPT_KEYS`
        self.replication = replication or Replication()  # replicas that must hold a receipt handed out
        self.heads = ChainHeads()  # this process's furthest receipt of each chain, to notice a loss
        self.chains = ChainReader(redis)
        self._touch = redis.register_script(TOUCH)

    # ---- reading ---------------------------------------------------------------
    def get(self, interrupt_id: str) -> Receipt | None:
        data = reply(self.redis.hgetall(keys.receipt(interrupt_id)))
        return Receipt.from_hash(interrupt_id, text_hash(data)) if data else None

    def digests(self, interrupt_ids: list[str]) -> dict[str, str]:
        """The digest of each existing receipt of these questions, in one round trip."""
        ids = list(dict.fromkeys(interrupt_ids))
        pipe = self.redis.pipeline(transaction=False)
        for iid in ids:
            pipe.hget(keys.receipt(iid), "digest")
        return {iid: as_text(d) for iid, d in zip(ids, pipe.execute(), strict=True) if d is not None}

    def signing(self) -> bool:
        """Whether receipts are signed here.

        Either this process holds the key, or a worker has signed with one.
        """
        return self.signer is not None or bool(self.redis.exists(keys.receipt_keys()))

    @staticmethod
    def signed_with_a_key(pipe: Pipeline) -> None:
        """On `pipe`, a reply saying whether any process has signed a receipt here (`signing`'s second part)."""
        pipe.exists(keys.receipt_keys())

    def pending(self, interrupt_id: str) -> bool:
        return self.redis.zscore(keys.receipts_pending(), interrupt_id) is not None

    def keyring(self) -> KeyRing:
        """The keys this process was given: its signer's and `PARLEY_RECEIPT_KEYS`'.

        The keys recorded in Redis are never trusted: whoever can write Redis could add one, and
        then sign a receipt that verifies with it.
        """
        ring = KeyRing()
        ring.merge(self.trusted)
        if self.signer is not None:
            ring.add(self.signer.public)
        return ring

    def recorded_keyids(self) -> list[str]:
        """The ids of every key a process recorded signing with here."""
        return sorted(as_text(k) for k in reply(self.redis.hkeys(keys.receipt_keys())))

    def workspaces(self) -> list[str]:
        return self.chains.workspaces()

    def chain(self, workspace: str, batch: int = 500) -> Iterator[Receipt]:
        return self.chains.chain(workspace, batch)

    # ---- writing ---------------------------------------------------------------
    def write(self, interrupt_id: str) -> Receipt | None:
        """The question's receipt, signed and chained now if not yet.

        None when it cannot have one: no signer, no such question, or not closed.
        """
        while True:
            try:
                return self._write_once(interrupt_id)
            except WatchError:  # another writer moved the chain's head, or wrote this receipt: read again
                continue

    def _write_once(self, interrupt_id: str) -> Receipt | None:
        """One attempt, in four round trips.

        The trips are: read the question, WATCH, read the rest, MULTI/EXEC. The first read only
        finds the workspace. What the receipt says is read again after the WATCH, on the watched
        connection. So across a failover, the server that takes the receipt is the one it was read
        from. That server holds the close the receipt records.
        """
        if self.signer is None:
            return self.get(interrupt_id)
        raw = reply(self.redis.hgetall(keys.interrupt(interrupt_id)))
        if not raw:
            self.redis.zrem(keys.receipts_pending(), interrupt_id)
            return self.get(interrupt_id)
        first = text_hash(raw)
        question = InterruptRecord.from_hash(first)
        if question.state not in CLOSED:
            return None
        workspace = question.team or question.enterprise or NO_WORKSPACE
        seen = self.heads.last(workspace)
        seen_id = seen.interrupt_id if seen else interrupt_id
        read_keys = [
            keys.receipt(interrupt_id),
            keys.receipt_head(workspace),
            keys.run(question.run_id),
            keys.interrupt(interrupt_id),
            keys.receipts_pending(),
            keys.receipt(seen_id),
        ]
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.watch(keys.receipt(interrupt_id), keys.receipt_head(workspace), keys.receipt_chain(workspace))
            found = read_watched(pipe, read_keys, [interrupt_id, seen_id])
            exists, head_flat, run_flat, question_flat, closed_at, seen_digest, seen_pending = found
            if exists:
                return self.get(interrupt_id)
            held = pairs(question_flat)
            now_held: InterruptRecord | None = question  # as first read, unless this server differs
            if held != first:
                now_held = InterruptRecord.from_hash(held) if held else None
            if now_held is None or now_held.state not in CLOSED:
                log.warning(
                    "receipt not written: this Redis does not hold the question closed (a failover lost its close)",
                    run_id=question.run_id,
                    interrupt_id=interrupt_id,
                    team=question.team,
                )
                return None
            question = now_held
            head = pairs(head_flat) or head_from_index(pipe, workspace)
            run_raw = gathered(pairs(run_flat), "conversation")
            conversation = json.loads(run_raw) if run_raw else {}
            sequence = int(head.get("sequence", "0")) + 1
            closed = float(as_text(closed_at)) if closed_at else (question.answered_at or time.time())
            body = statement(
                question, conversation, sequence=sequence, previous=head.get("digest") or None, closed_at=closed
            )
            payload = canonical(body)
            digest = sha256(payload)
            envelope = sign(payload, self.signer)
            lost = lost_place(seen, as_text(seen_digest), sequence - 1, bool(seen_pending))
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
            if lost is not None:
                pipe.rpush(keys.receipts_rewound(), rewind_note(lost, sequence - 1))
                pipe.ltrim(keys.receipts_rewound(), -REWINDS_KEPT, -1)
            pipe.execute()
        if lost is not None:
            self.heads.forget(workspace)
            metrics.RECEIPT_REWINDS.inc()
            log.error(
                "receipt chain went back: Redis lost a receipt this process wrote or gave out (a failover?)",
                run_id=question.run_id,
                interrupt_id=interrupt_id,
                team=question.team,
                workspace=workspace,
                lost_sequence=lost.sequence,
                lost_question=lost.interrupt_id,
                head_sequence=sequence - 1,
            )
        self.heads.saw(Place(workspace, sequence, interrupt_id, digest))
        log.info("receipt written", run_id=question.run_id, interrupt_id=interrupt_id, team=question.team)
        return Receipt(interrupt_id, envelope, digest, workspace, sequence, question.run_id)

    # ---- handing out -----------------------------------------------------------
    def confirmed(self, held: list[tuple[str, str]]) -> bool:
        """Whether each (question id, digest) receipt is stored as such, on enough replicas."""
        return confirmed(self.redis, self.replication, self._touch, held)

    def issued(self, run_id: str) -> list[Receipt]:
        """The receipts of `of_run`, to hand out: `ReceiptUnconfirmed` until enough replicas hold them."""
        found = self.of_run(run_id)
        if not self.confirmed([(r.interrupt_id, r.digest) for r in found]):
            wanted = self.replication.min_replicas
            raise ReceiptUnconfirmed(f"the receipt of {run_id} is not yet on {wanted} replica(s)")
        for receipt in found:
            self.heads.saw(Place(receipt.workspace, receipt.sequence, receipt.interrupt_id, receipt.digest))
        return found

    def confirmed_head(self, workspace: str) -> int:
        """The sequence of the workspace's newest receipt, once enough replicas hold it (0: none kept).

        Receipts are written in chain order, so replicas holding the head hold the chain before it.
        `ReceiptUnconfirmed` while they do not.
        """
        head = text_hash(reply(self.redis.hgetall(keys.receipt_head(workspace))))
        if not head:
            return 0
        if self.confirmed([(head["question_id"], head["digest"])]):
            return int(head["sequence"])
        if not self.redis.exists(keys.receipt(head["question_id"])):
            newest = self.chains.newest_kept(workspace)
            if newest is None:
                return 0  # gone with retention, and every receipt before it with it
            log.error(  # retention takes the oldest first: the newest gone alone was deleted, or lowered
                "the newest receipt of a chain is gone; exporting up to the newest kept",
                workspace=workspace,
                interrupt_id=head["question_id"],
                sequence=int(head["sequence"]),
                kept=newest.sequence,
            )
            if self.confirmed([(newest.interrupt_id, newest.digest)]):
                return newest.sequence
        wanted = self.replication.min_replicas
        raise ReceiptUnconfirmed(f"the newest receipts of workspace {workspace} are not yet on {wanted} replica(s)")

    def rewinds(self) -> list[dict[str, Any]]:
        """The notes of chains found gone back (`receipt_replicas.rewind_note`), oldest first."""
        return [json.loads(as_text(n)) for n in reply(self.redis.lrange(keys.receipts_rewound(), 0, -1))]

    def questions_of(self, run_id: str) -> list[str]:
        """The question or group run `run_id` is, or was last, parked on."""
        parked = reply(self.redis.hget(keys.run(run_id), "interrupt"))
        if not parked:
            return []
        members = reply(self.redis.hget(keys.group(as_text(parked)), "members"))
        return list(json.loads(members)) if members else [as_text(parked)]

    def of_run(self, run_id: str) -> list[Receipt]:
        """The receipts of the questions `run_id` was parked on, written now if due.

        A receipt missing but no longer pending was written meanwhile by another writer.
        Its store and unmarking are one MULTI, so reading it again finds it.
        """
        found = []
        for iid in self.questions_of(run_id):
            receipt = self.get(iid)
            if receipt is None and self.signer is not None:
                receipt = self.write(iid) if self.pending(iid) else self.get(iid)
            if receipt is not None:
                found.append(receipt)
        return found

    def write_for_run(self, run_id: str) -> list[Receipt]:
        """Write the pending receipts of the question or group `run_id` was parked on.

        The worker calls this before it resumes a run. So with a signer configured, no run goes on from
        an answer without a receipt.
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
        """The sweep's part: write every pending receipt, and return how many.

        Without a signer, it forgets marks older than `keep_unsigned` seconds. Their questions are gone
        with retention.
        """
        if self.signer is None:
            if keep_unsigned > 0:
                self.redis.zremrangebyscore(keys.receipts_pending(), "-inf", now - keep_unsigned)
            return 0
        return self.write_pending()

    def write_pending(self, limit: int = 200, older_than: float = 0.0) -> int:
        """Write pending receipts closed `older_than` seconds ago, oldest first.

        Returns how many.
        """
        top = time.time() - older_than
        found = reply(self.redis.zrangebyscore(keys.receipts_pending(), "-inf", top, start=0, num=limit))
        ids = [as_text(i) for i in found]
        written = 0
        for iid in ids:
            try:
                done = self.write(iid)
            except RedisError:
                raise  # Redis is away: the next sweep tries them all again
            except Exception as exc:  # one question's receipt failing must not hold back the others'
                log.error("a receipt could not be written", interrupt_id=iid, error=repr(exc))
                continue
            written += done is not None
        return written
