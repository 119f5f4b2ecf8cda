"""How many questions one owner has open, so a runaway caller cannot fill Redis.

A token may ask 120 questions a minute, and a question is kept for 30 days. Without a cap, a
script asking in a loop would hold millions of open questions and fill the Redis every token
shares. So each owner has a set of the question ids it may still have open. A create adds its
id in the same transaction as the question. The set is pruned only when it reaches the cap: a
member counts while its run is queued, running or paused. So a create under the cap costs one
SCARD, and the set never holds much more than the cap.

The check runs before a question is created, not in its transaction. Creates of one owner that
run at the same moment may pass the cap by how many are in flight. That keeps creates of one
owner from contending on a watched key, and the cap is a bound on a runaway, not a quota.
"""

from __future__ import annotations

from redis import Redis
from redis.client import Pipeline

from workers.store import keys
from workers.store.records import LIVE_STATUSES
from workers.store.replies import as_text, reply

PRUNE_BATCH = 1000
"""Run statuses read per round trip while pruning."""
_LIVE = frozenset(s.value for s in LIVE_STATUSES)


class OpenQuestions:
    """Each owner's maybe-open question ids, reached as `QuestionStore.open`."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    def full(self, owner: str, cap: int) -> int:
        """How many questions `owner` has open if that is `cap` or more, else 0.

        Ids whose runs closed or were deleted leave the set here, and only here.
        """
        key = keys.api_open(owner)
        if reply(self.redis.scard(key)) < cap:
            return 0
        ids = sorted(as_text(m) for m in reply(self.redis.smembers(key)))
        closed: list[str] = []
        for lo in range(0, len(ids), PRUNE_BATCH):
            batch = ids[lo : lo + PRUNE_BATCH]
            reads = self.redis.pipeline(transaction=False)
            for qid in batch:
                reads.hget(keys.run(qid), "status")
            statuses = reads.execute()
            closed += [q for q, st in zip(batch, statuses, strict=True) if st is None or as_text(st) not in _LIVE]
        if closed:
            self.redis.srem(key, *closed)
        still = len(ids) - len(closed)
        return still if still >= cap else 0

    @staticmethod
    def stage_add(pipe: Pipeline, owner: str, question_id: str) -> None:
        """Count a question being created as open, in its create's transaction."""
        pipe.sadd(keys.api_open(owner), question_id)

    @staticmethod
    def stage_drop(pipe: Pipeline, owner: str, question_id: str) -> None:
        """Stop counting a question that is withdrawn or deleted."""
        pipe.srem(keys.api_open(owner), question_id)
