"""The MCP approval gateway's state in Redis: forward-once claims and standing approvals.

Only the step that claims an asked tool call first forwards it upstream (`claim`, one `SET NX`).
So it is never forwarded again: not for an approval read twice, nor a duplicate request. Nor for
a process that restarts after the claim. A call whose client went away is claimed as such before
anyone can forward it. A standing approval is one key per MCP session and tool. It holds the run
that granted it and expires with the approval.
"""

from __future__ import annotations

import hashlib
from typing import Any

from redis import Redis

from workers.store import keys

FORWARDED = "forwarded"
CLIENT_GONE = "client gone"
CLAIM_TTL = 7 * 24 * 3600
"""Seconds a claim is kept: longer than any approval stays open (`expires_in` is bounded by the rules file)."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class GatewayStore:
    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    def claim(self, question_id: str, outcome: str, ttl: int = CLAIM_TTL) -> str | None:
        """Record `outcome` for the call asked as `question_id`, unless one is recorded.

        Returns None when this call won. Otherwise it returns the earlier outcome, which stands.
        """
        key = keys.gateway_forward(question_id)
        if self.redis.set(key, outcome, nx=True, ex=ttl):
            return None
        return _text(self.redis.get(key)) or outcome

    def claimed(self, question_id: str) -> str | None:
        return _text(self.redis.get(keys.gateway_forward(question_id)))

    def grant_standing(self, session: str, tool: str, run_id: str, ttl: int) -> None:
        """Let `session` call `tool` unasked for `ttl` seconds, on run `run_id`'s approval."""
        self.redis.set(keys.gateway_standing(_digest(session), _digest(tool)), run_id, ex=ttl)

    def standing(self, session: str, tool: str) -> str | None:
        """The run whose standing approval lets `session` call `tool` now, or None."""
        return _text(self.redis.get(keys.gateway_standing(_digest(session), _digest(tool))))


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else (str(value) if value is not None else None)
