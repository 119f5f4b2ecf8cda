"""`QuestionStore`: what the HTTP API keeps in Redis beside the runs it starts.

An API question is a run of the built-in `question` agent (its id is the run's id); this
store holds what the run does not: which token asked, where, the callback and metadata,
the idempotency keys, the per-token rate-limit windows, the tokens themselves (by the
sha256 of their value only) and the state of each webhook delivery.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.exceptions import WatchError

from workers.logs import Log
from workers.store import keys
from workers.store.records import ApiQuestionRecord, ApiTokenRecord, RunStatus, WebhookState
from workers.store.runs import stage_create

log = Log("parley.questions")
IDEMPOTENCY_TTL = 86400  # an Idempotency-Key is remembered for a day
_UNASKED = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)


@dataclass(frozen=True)
class Binding:
    """An Idempotency-Key (by its sha256) of one token, to bind to a question made from a body (its digest)."""

    token_name: str
    key_digest: str
    body_digest: str


class QuestionStore:
    """All API state lives behind this class; the Redis connection is passed in."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    # ---- tokens ----------------------------------------------------------------
    def add_token(self, record: ApiTokenRecord) -> bool:
        """Store a new token under its name; False when the name is taken (nothing written)."""
        if not self.redis.hsetnx(keys.api_tokens(), record.name, record.token_hash):
            return False
        self.redis.hset(keys.api_token(record.token_hash), mapping=record.to_hash())
        return True

    def token_by_name(self, name: str) -> ApiTokenRecord | None:
        token_hash = self.redis.hget(keys.api_tokens(), name)
        return self.token_by_hash(_s(token_hash)) if token_hash is not None else None

    def token_by_hash(self, token_hash: str) -> ApiTokenRecord | None:
        data = self.redis.hgetall(keys.api_token(token_hash))
        return ApiTokenRecord.from_hash(_decode(data)) if data else None

    def tokens(self) -> list[ApiTokenRecord]:
        hashes = [_s(h) for h in self.redis.hvals(keys.api_tokens())]
        pipe = self.redis.pipeline(transaction=False)
        for h in hashes:
            pipe.hgetall(keys.api_token(h))
        found = [ApiTokenRecord.from_hash(_decode(d)) for d in pipe.execute() if d]
        return sorted(found, key=lambda t: t.name)

    def revoke_token(self, name: str) -> bool:
        """Delete a token by name; its questions stay. False when there is no such token."""
        token_hash = self.redis.hget(keys.api_tokens(), name)
        if token_hash is None:
            return False
        pipe = self.redis.pipeline(transaction=True)
        pipe.hdel(keys.api_tokens(), name)
        pipe.delete(keys.api_token(_s(token_hash)))
        pipe.execute()
        return True

    # ---- rate limits -----------------------------------------------------------
    def hit(self, token_name: str, limit: int, window: int, now: float | None = None) -> float:
        """Count one request of `token_name` in the current fixed window.

        Returns 0 when it is within `limit`, else the seconds until the window ends. A fixed
        window is one INCR and one EXPIRE on the request path; that is all a per-token cap
        needs, so no rate-limit library is brought in for it.
        """
        now = time.time() if now is None else now
        slot = int(now // window)
        key = keys.api_rate(token_name, slot)
        pipe = self.redis.pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, window + 1)
        count = int(pipe.execute()[0])
        return 0.0 if count <= limit else max(0.001, (slot + 1) * window - now)

    # ---- idempotency -----------------------------------------------------------
    def release_idempotency(self, token_name: str, key_digest: str, question_id: str) -> None:
        """Forget a key whose question was never created (its creation was refused)."""
        key = keys.api_idempotency(token_name, key_digest)
        raw = self.redis.get(key)
        if raw and json.loads(raw).get("question_id") == question_id:
            self.redis.delete(key)

    # ---- questions -------------------------------------------------------------
    def create(
        self,
        record: ApiQuestionRecord,
        agent: str,
        started_by: str,
        conversation: dict[str, Any],
        binding: Binding | None = None,
    ) -> dict[str, str] | None:
        """Create the question's queued run (id `record.id`) and the API's record of it, in one step,
        with `binding`'s Idempotency-Key bound to it in the same step: a failed create binds nothing.

        Returns None once created, or the binding that holds when the key is bound already (and
        then writes nothing).
        """
        with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    if binding is not None:
                        key = keys.api_idempotency(binding.token_name, binding.key_digest)
                        pipe.watch(key)
                        raw = pipe.get(key)
                        if raw:
                            return dict(json.loads(raw))
                    pipe.multi()
                    if binding is not None:
                        bound = {"question_id": record.id, "body": binding.body_digest}
                        pipe.set(key, json.dumps(bound), ex=IDEMPOTENCY_TTL)
                    stage_create(
                        pipe, record.id, agent, record.request.reason, started_by, conversation, record.created_at
                    )
                    pipe.hset(keys.api_question(record.id), mapping=record.to_hash())
                    pipe.zadd(keys.api_questions(record.token), {record.id: record.created_at})
                    pipe.zadd(keys.api_all_questions(), {record.id: record.created_at})
                    pipe.execute()
                    return None
                except WatchError:  # another request bound the key meanwhile: read its binding
                    continue

    def withdraw(self, record: ApiQuestionRecord, binding: Binding | None) -> bool:
        """Delete a question whose run has not asked it yet (nothing posted), with its key's binding.

        Only deletions, which Redis accepts even when it is full. False, and nothing deleted, when
        the run asked its question or left `queued`/`running`, or anything touched it meanwhile.
        """
        qid = record.id
        with self.redis.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(keys.run(qid), keys.journal(qid))
                status = pipe.hget(keys.run(qid), "status")
                asked = any(_s(f).startswith("ask:") for f in pipe.hkeys(keys.journal(qid)))
                if asked or status is None or _s(status) not in _UNASKED:
                    return False
                pipe.multi()
                pipe.delete(keys.run(qid), keys.journal(qid), keys.history(qid), keys.api_question(qid))
                for name in _UNASKED:
                    pipe.zrem(keys.status_index(name), qid)
                for index in (keys.all_runs_index(), keys.accepted_index(), keys.leases_index()):
                    pipe.zrem(index, qid)
                pipe.zrem(keys.api_questions(record.token), qid)
                pipe.zrem(keys.api_all_questions(), qid)
                if binding is not None:  # bound with the question, in the same step: it is this question's
                    pipe.delete(keys.api_idempotency(binding.token_name, binding.key_digest))
                pipe.execute()
                return True
            except WatchError:
                return False

    def get(self, question_id: str) -> ApiQuestionRecord | None:
        data = self.redis.hgetall(keys.api_question(question_id))
        return ApiQuestionRecord.from_hash(_decode(data)) if data else None

    def read(self, question_id: str) -> ApiQuestionRecord | UnreadableQuestion | None:
        """As `get`, but a record this version cannot read comes back as `UnreadableQuestion`."""
        data = self.redis.hgetall(keys.api_question(question_id))
        return _parsed(question_id, _decode(data)) if data else None

    def many(self, ids: Iterable[str]) -> list[ApiQuestionRecord | UnreadableQuestion]:
        """Several questions in one round trip, in order; one that cannot be read is an `UnreadableQuestion`."""
        ids = list(ids)
        pipe = self.redis.pipeline(transaction=False)
        for qid in ids:
            pipe.hgetall(keys.api_question(qid))
        return [_parsed(qid, _decode(d)) for qid, d in zip(ids, pipe.execute(), strict=True) if d]

    def page(self, token_name: str | None, before: float | None, limit: int) -> list[tuple[str, float]]:
        """Question ids with their creation times, newest first, created before `before` (a cursor)."""
        index = keys.api_all_questions() if token_name is None else keys.api_questions(token_name)
        top: Any = f"({before!r}" if before is not None else "+inf"
        rows = self.redis.zrevrangebyscore(index, top, "-inf", start=0, num=limit, withscores=True)
        return [(_s(m), float(s)) for m, s in rows]

    def forget(self, question_ids: list[str]) -> int:
        """Delete the API's records of questions whose runs were purged (retention); how many there were."""
        if not question_ids:
            return 0
        tokens = self.redis.pipeline(transaction=False)
        for qid in question_ids:
            tokens.hget(keys.api_question(qid), "token")
        owners = tokens.execute()
        pipe = self.redis.pipeline(transaction=True)
        for qid, owner in zip(question_ids, owners, strict=True):
            if owner is None:
                continue
            pipe.delete(keys.api_question(qid))
            pipe.zrem(keys.api_questions(_s(owner)), qid)
            pipe.zrem(keys.api_all_questions(), qid)
        pipe.execute()
        return sum(o is not None for o in owners)

    def set_webhook(self, question_id: str, state: WebhookState) -> None:
        self.redis.hset(keys.api_question(question_id), "webhook", state.model_dump_json())

    def webhook(self, question_id: str) -> WebhookState | None:
        raw = self.redis.hget(keys.api_question(question_id), "webhook")
        return WebhookState.model_validate_json(raw) if raw else None


@dataclass(frozen=True)
class UnreadableQuestion:
    """A question's record this version cannot read: what a listing can still say about it."""

    id: str
    token: str
    team: str
    created_at: float
    error: str


def _parsed(question_id: str, data: dict[str, str]) -> ApiQuestionRecord | UnreadableQuestion:
    try:
        return ApiQuestionRecord.from_hash(data)
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError and bad JSON are ValueErrors
        log.error("an API question's record cannot be read", run_id=question_id, error=repr(exc))
        try:
            created = float(data.get("created_at") or 0)
        except ValueError:
            created = 0.0
        error = str(exc).splitlines()[0]
        return UnreadableQuestion(question_id, data.get("token", ""), data.get("team", ""), created, error)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _decode(data: dict[Any, Any]) -> dict[str, str]:
    return {_s(k): _s(v) for k, v in data.items()}
