"""Which process is sending a question's Temporal signal now.

So only one of two senders sends it. The process that announces an outcome sends its signal
itself, at once (`workers.questions.signal_direct`). It queues a delivery job as the fallback.
It takes the lease in the transaction that records the outcome. While the lease stands, the job
sends nothing and looks again later. The lease ends when the direct attempt ends. When the
process died during it, the lease lapses by its TTL, and the job then delivers.
"""

from __future__ import annotations

from redis import Redis
from redis.client import Pipeline

from workers.store import keys
from workers.store.replies import reply


class SignalLeases:
    """Leases on questions' signals, one key with a TTL per question."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    @staticmethod
    def take(pipe: Pipeline, question_id: str, holder: str, ttl: float) -> None:
        """On `pipe` (the transaction recording the outcome): `holder` sends the signal for `ttl` seconds."""
        pipe.set(keys.signal_sending(question_id), holder, px=max(1, int(ttl * 1000)))

    def holder(self, question_id: str) -> str | None:
        """Who holds the question's lease now, or None once it ended or lapsed."""
        raw = reply(self.redis.get(keys.signal_sending(question_id)))
        if not raw:
            return None
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def end(self, question_id: str) -> None:
        """The attempt ended, so the fallback job may send from now on."""
        self.redis.delete(keys.signal_sending(question_id))
