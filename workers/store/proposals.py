"""Answers read from a plain-words reply, kept until the replier confirms them.

A proposal names its question, the replier and the answers the model read. Confirm takes it
once, and only for that person. One script checks and deletes it. So a double click or a second
person's click accepts nothing. Unconfirmed, it expires.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from redis import Redis

from workers.interaction import Answer
from workers.store import keys
from workers.store.replies import reply, text_hash

PROPOSAL_TTL = 24 * 3600
READINGS_TTL = 24 * 3600

# KEYS: proposal   ARGV: user   Returns the proposal's fields, deleted, or {} when not theirs or gone.
TAKE = """
local h = redis.call('HGETALL', KEYS[1])
if #h == 0 then return {} end
local p = {}
for i = 1, #h, 2 do p[h[i]] = h[i + 1] end
if p.user ~= ARGV[1] then return {} end
redis.call('DEL', KEYS[1])
return h
"""


@dataclass(frozen=True)
class Proposal:
    """What a model read from `user`'s reply to question `interrupt_id`."""

    id: str
    interrupt_id: str
    user: str
    answers: list[Answer]

    @classmethod
    def of(cls, proposal_id: str, fields: dict[str, str]) -> Proposal:
        answers = [Answer.model_validate(a) for a in json.loads(fields["answers"])]
        return cls(proposal_id, fields["interrupt_id"], fields["user"], answers)


class ProposalStore:
    """Proposals by id: put when read, taken once by the replier's Confirm."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._take = redis.register_script(TAKE)

    def put(self, interrupt_id: str, user: str, answers: list[Answer], ttl: int = PROPOSAL_TTL) -> str:
        proposal_id = secrets.token_urlsafe(12)
        fields = {
            "interrupt_id": interrupt_id,
            "user": user,
            "answers": json.dumps([a.model_dump(mode="json", exclude_none=True) for a in answers]),
        }
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(keys.reply_proposal(proposal_id), mapping=fields)
            pipe.expire(keys.reply_proposal(proposal_id), ttl)
            pipe.execute()
        return proposal_id

    def take_reading(self, interrupt_id: str, user: str, budget: int, ttl: int = READINGS_TTL) -> bool:
        """Whether the model may read one more of `user`'s replies to `interrupt_id`.

        Each person has `budget` readings per question, counted afresh after `ttl` seconds.
        """
        key = keys.reply_readings(interrupt_id, user)
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(key, 0, nx=True, ex=ttl)
            pipe.incr(key)
            _, count = pipe.execute()
        return int(count) <= budget

    def get(self, proposal_id: str) -> Proposal | None:
        fields = text_hash(reply(self.redis.hgetall(keys.reply_proposal(proposal_id))))
        return Proposal.of(proposal_id, fields) if fields else None

    def take(self, proposal_id: str, user: str) -> Proposal | None:
        """The proposal, deleted, if `user` made it.

        Otherwise None, and nothing changes.
        """
        flat = [
            x.decode() if isinstance(x, bytes) else str(x)
            for x in self._take(keys=[keys.reply_proposal(proposal_id)], args=[user])
        ]
        fields = dict(zip(flat[::2], flat[1::2], strict=True))
        return Proposal.of(proposal_id, fields) if fields else None
