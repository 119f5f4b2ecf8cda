"""Drafts: items a person answered at a terminal before Ctrl-C, to pre-fill on resume.

A draft is one small JSON string per question. It is written when the person quits. It is read
when `parley run --resume` asks the question again. It expires with the question, or after
`DRAFT_TTL` for a question that never expires. It is dropped once an answer is accepted. The
host leaves secret items out, so a draft never holds a secret in clear.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from redis import Redis
from redis.exceptions import RedisError

from workers.interaction import AnswerValue
from workers.store import keys
from workers.store.replies import reply

DRAFT_TTL = 7 * 86400
"""How long the draft of a question with no expiry is kept: a week, then it is asked afresh."""


class Drafts:
    """Keeps, reads and drops drafts in Redis.

    A Redis failure loses the draft, never the run.
    """

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    def keep(self, interrupt_id: str, values: Mapping[str, AnswerValue], expires_at: float | None) -> None:
        """Keep `values` (item id -> value) for the question until it expires.

        Nothing is kept when empty or already expired.
        """
        ttl = int(expires_at - time.time()) if expires_at else DRAFT_TTL
        if not values or ttl <= 0:
            return
        try:
            self.redis.set(keys.draft(interrupt_id), json.dumps(dict(values)), ex=ttl)
        except RedisError:
            return  # a draft is a convenience: the question is still open, and asked in full on resume

    def read(self, interrupt_id: str) -> dict[str, AnswerValue]:
        """The question's draft (item id -> value), empty if absent or unreadable."""
        try:
            raw = reply(self.redis.get(keys.draft(interrupt_id)))
            found = json.loads(raw) if raw else {}
        except (RedisError, ValueError):
            return {}
        return {k: v for k, v in found.items() if _is_value(v)} if isinstance(found, dict) else {}

    def drop(self, interrupt_id: str) -> None:
        """Forget the question's draft: it was answered."""
        try:
            self.redis.delete(keys.draft(interrupt_id))
        except RedisError:
            return  # it expires with the question anyway


def _is_value(value: object) -> bool:
    """Whether `value` has an `AnswerValue`'s shape: text, or a list of texts."""
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
