"""`QuestionStore`: what the HTTP API keeps in Redis beside the runs it starts.

An API question is a run of the built-in `question` agent, sharing its id. This store holds what
the run does not:
- which token asked, where, the callback and metadata
- the idempotency keys
- the rate-limit logs (`rates.py`), per token and of failed bearer tokens per client address
- the tokens themselves, by their value's sha256 only
- the state of each webhook delivery
- the asker's sealed copy of a question's secret answers, until read once
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.client import Pipeline
from redis.exceptions import WatchError

from workers.logs import Log
from workers.store import idempotency, journal_names, keys, question_hashes
from workers.store.idempotency import Binding, Bound
from workers.store.open_questions import OpenQuestions
from workers.store.rates import RateLog
from workers.store.records import ApiQuestionRecord, ApiTokenRecord, RunStatus, WebhookState
from workers.store.replies import as_text, reply, text_hash
from workers.store.run_writes import stage_create
from workers.store.sealed import SecretBox

log = Log("parley.questions")
REVEALED = "revealed"  # what a question's secrets key holds once the asker has read them
_UNASKED = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)


class QuestionStore:
    """All API state, behind one class given its Redis connection."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self.rates = RateLog(redis)
        self.open = OpenQuestions(redis)

    # ---- tokens ----------------------------------------------------------------
    def add_token(self, record: ApiTokenRecord) -> bool:
        """Store a new token under its name.

        False, with nothing written, when the name is taken.
        """
        if not self.redis.hsetnx(keys.api_tokens(), record.name, record.token_hash):
            return False
        self.redis.hset(keys.api_token(record.token_hash), mapping=record.to_hash())
        return True

    def token_by_name(self, name: str) -> ApiTokenRecord | None:
        token_hash = self.redis.hget(keys.api_tokens(), name)
        return self.token_by_hash(as_text(token_hash)) if token_hash is not None else None

    def token_by_hash(self, token_hash: str) -> ApiTokenRecord | None:
        data = reply(self.redis.hgetall(keys.api_token(token_hash)))
        return ApiTokenRecord.from_hash(text_hash(data)) if data else None

    def tokens(self) -> list[ApiTokenRecord]:
        hashes = [as_text(h) for h in reply(self.redis.hvals(keys.api_tokens()))]
        pipe = self.redis.pipeline(transaction=False)
        for h in hashes:
            pipe.hgetall(keys.api_token(h))
        found = [ApiTokenRecord.from_hash(text_hash(d)) for d in pipe.execute() if d]
        return sorted(found, key=lambda t: t.name)

    def revoke_token(self, name: str) -> bool:
        """Delete a token by name, keeping its questions.

        False when there is no such token.
        """
        token_hash = self.redis.hget(keys.api_tokens(), name)
        if token_hash is None:
            return False
        pipe = self.redis.pipeline(transaction=True)
        pipe.hdel(keys.api_tokens(), name)
        pipe.delete(keys.api_token(as_text(token_hash)))
        pipe.execute()
        return True

    # ---- rate limits -----------------------------------------------------------
    def hit(self, bucket: str, limit: int, window: int, now: float | None = None, *, cost: int = 1) -> float:
        """Count `cost` requests of `bucket` if they fit `limit` over any `window` seconds.

        A bucket is a token's owner id, or a client address. Returns 0 when they fit, else the seconds
        until they would.
        """
        return self.rates.hit(bucket, limit, window, now, cost=cost)

    def over(self, bucket: str, limit: int, window: int, now: float | None = None) -> float:
        """Like `hit` without counting.

        Returns the seconds until a full `bucket` has room, else 0.
        """
        return self.rates.over(bucket, limit, window, now)

    # ---- idempotency -----------------------------------------------------------
    def bound(self, binding: Binding) -> Bound | None:
        """The question `binding`'s key made already, if any."""
        held = next((as_text(v) for v in reply(self.redis.mget(binding.names)) if v), None)
        return idempotency.bound(held, binding) if held is not None else None

    def release_idempotency(self, binding: Binding, question_id: str) -> None:
        """Forget a key whose question was never created (its creation was refused)."""
        for name, raw in zip(binding.names, reply(self.redis.mget(binding.names)), strict=True):
            if raw and idempotency.question_of(as_text(raw)) == question_id:
                self.redis.delete(name)

    # ---- questions -------------------------------------------------------------
    def create(
        self,
        record: ApiQuestionRecord,
        agent: str,
        started_by: str,
        conversation: dict[str, Any],
        binding: Binding | None = None,
    ) -> Bound | None:
        """Create the question's queued run (`record.id`) and the API's record, in one step.

        `binding`'s Idempotency-Key is bound to it in that step, so a failed create binds nothing.
        Returns None once created. If the key is bound already, it returns the binding that holds and
        writes nothing.
        """
        with self.redis.pipeline(transaction=True) as pipe:
            while True:
                try:
                    if binding is not None:
                        pipe.watch(*binding.names)
                        held = next((as_text(v) for v in reply(pipe.mget(binding.names)) if v), None)
                        if held is not None:
                            return idempotency.bound(held, binding)
                    pipe.multi()
                    if binding is not None:
                        pipe.set(binding.name, binding.value(record.id), ex=idempotency.TTL)
                    stage_create(
                        pipe, record.id, agent, record.request.reason, started_by, conversation, record.created_at
                    )
                    pipe.hset(keys.api_question(record.id), mapping=record.to_hash())
                    pipe.zadd(keys.api_owned(record.owner), {record.id: record.created_at})
                    self.open.stage_add(pipe, record.owner, record.id)
                    pipe.zadd(keys.api_all_questions(), {record.id: record.created_at})
                    pipe.execute()
                    return None
                except WatchError:  # another request bound the key meanwhile: read its binding
                    continue

    def withdraw(self, record: ApiQuestionRecord, binding: Binding | None) -> bool:
        """Delete a question its run has not asked yet, with its key's binding.

        Nothing was posted. This makes only deletions, which Redis accepts even when full. It returns
        False and deletes nothing in some cases. The run may have asked its question, or left
        `queued`/`running`. Or something touched it meanwhile.
        """
        qid = record.id
        with self.redis.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(keys.run(qid), keys.journal(qid))
                status = reply(pipe.hget(keys.run(qid), "status"))
                asked = any(as_text(f).startswith(journal_names.ASK) for f in reply(pipe.hkeys(keys.journal(qid))))
                if asked or status is None or as_text(status) not in _UNASKED:
                    return False
                pipe.multi()
                pipe.delete(keys.run(qid), keys.journal(qid), keys.history(qid), keys.api_question(qid))
                for name in _UNASKED:
                    pipe.zrem(keys.status_index(name), qid)
                for index in (keys.all_runs_index(), keys.accepted_index(), keys.leases_index()):
                    pipe.zrem(index, qid)
                pipe.zrem(keys.api_owned(record.owner) if record.owner else keys.api_questions(record.token), qid)
                if record.owner:
                    self.open.stage_drop(pipe, record.owner, qid)
                pipe.zrem(keys.api_all_questions(), qid)
                if binding is not None:  # bound with the question, in the same step: it is this question's
                    pipe.delete(binding.name)
                pipe.execute()
                return True
            except WatchError:
                return False

    def get(self, question_id: str) -> ApiQuestionRecord | None:
        [data] = question_hashes.read(self.redis, [question_id])
        return ApiQuestionRecord.from_hash(data) if data else None

    def read(self, question_id: str) -> ApiQuestionRecord | UnreadableQuestion | None:
        """As `get`, but an unreadable record comes back as `UnreadableQuestion`."""
        [data] = question_hashes.read(self.redis, [question_id])
        return _parsed(question_id, data) if data else None

    def many(self, ids: Iterable[str]) -> list[ApiQuestionRecord | UnreadableQuestion]:
        """Several questions in order, in one or two round trips.

        An unreadable one is an `UnreadableQuestion`.
        """
        ids = list(ids)
        return [_parsed(qid, d) for qid, d in zip(ids, question_hashes.read(self.redis, ids), strict=True) if d]

    def refer(self, record: ApiQuestionRecord, interrupt_id: str) -> None:
        """Keep the question's request and context in its interrupt alone (`question_hashes.refer`)."""
        question_hashes.refer(self.redis, record, interrupt_id)

    def page(
        self, owner: str | None, before: float | None, limit: int, *, legacy: str = "", since: float = 0.0
    ) -> list[tuple[str, float]]:
        """Question ids with creation times, newest first, created before `before` (a cursor).

        `owner` None lists every question, for an admin. `legacy` adds questions asked under that name
        before owners existed. Those must be created at `since` or later.
        """
        top: Any = f"({before!r}" if before is not None else "+inf"
        ranges = [(keys.api_all_questions() if owner is None else keys.api_owned(owner), "-inf")]
        if owner is not None and legacy:
            ranges.append((keys.api_questions(legacy), repr(since)))
        pipe = self.redis.pipeline(transaction=False)
        for index, bottom in ranges:
            pipe.zrevrangebyscore(index, top, bottom, start=0, num=limit, withscores=True)
        rows = [(as_text(m), float(sc)) for found in pipe.execute() for m, sc in found]
        return sorted(rows, key=lambda row: row[1], reverse=True)[:limit]

    def forget(self, question_ids: list[str]) -> int:
        """Delete the API's records of questions whose runs retention purged.

        Returns how many there were.
        """
        if not question_ids:
            return 0
        reads = self.redis.pipeline(transaction=False)
        for qid in question_ids:
            reads.hmget(keys.api_question(qid), ["token", "owner"])
        found = reads.execute()
        pipe = self.redis.pipeline(transaction=True)
        for qid, (name, owner) in zip(question_ids, found, strict=True):
            pipe.delete(keys.api_secrets(qid))  # the asker's sealed copy, or the mark that it was read
            if name is None:
                continue
            pipe.delete(keys.api_question(qid))
            pipe.zrem(keys.api_owned(as_text(owner)) if owner else keys.api_questions(as_text(name)), qid)
            if owner:
                self.open.stage_drop(pipe, as_text(owner), qid)
            pipe.zrem(keys.api_all_questions(), qid)
        pipe.execute()
        return sum(name is not None for name, _ in found)

    # ---- secret answers, for the asker alone, once ------------------------------
    def keep_secrets(self, question_id: str, values: dict[str, str], box: SecretBox, ttl: float) -> None:
        """Keep the question's secret answers sealed for its asker, for `ttl` seconds.

        0 keeps them until retention deletes the question. It never writes over a copy kept or read
        before. So a replayed run cannot re-arm it.
        """
        expiry = int(ttl) if ttl >= 1 else None
        self.redis.set(keys.api_secrets(question_id), box.seal(values), nx=True, ex=expiry)

    def sealed_secrets(self, question_id: str, interrupt_id: str) -> tuple[str, bool] | None:
        """The sealed secret answers to reveal, and whether they are the kept copy.

        Otherwise they are the run's own, read before the run ended and kept them. None when they were
        read or are gone.
        """
        kept = self.redis.get(keys.api_secrets(question_id))
        if kept is not None:
            return None if as_text(kept) == REVEALED else (as_text(kept), True)
        live = self.redis.hget(keys.secrets(question_id), interrupt_id) if interrupt_id else None
        return (as_text(live), False) if live is not None else None

    def claim_secrets(self, question_id: str, seen: str | None, ttl: float) -> bool:
        """Mark the question's secrets read, deleting the kept copy.

        True only for the one caller that finds the key as it saw it. `seen` None means no copy was kept
        yet. WATCH makes it happen once.
        """
        key = keys.api_secrets(question_id)
        with self.redis.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(key)
                now = pipe.get(key)
                if (None if now is None else as_text(now)) != seen:
                    return False
                pipe.multi()
                pipe.set(key, REVEALED, ex=int(ttl) if ttl >= 1 else None)
                pipe.execute()
            except WatchError:
                return False
        return True

    def set_webhook(self, question_id: str, state: WebhookState) -> None:
        self.redis.hset(keys.api_question(question_id), "webhook", state.model_dump_json())

    def set_signal(self, question_id: str, state: WebhookState) -> None:
        """The delivery of a Temporal target's signal (see `workers.questions.signals`)."""
        self.redis.hset(keys.api_question(question_id), "signal", state.model_dump_json())

    def announce_signal(
        self, question_id: str, state: WebhookState, enqueue: Callable[[Pipeline], object]
    ) -> list[Any]:
        """Record a signal to deliver, and `enqueue` its job in the same transaction.

        The job goes on the pipeline. A process killed between the two would leave an announced signal
        no job delivers. Returns the transaction's replies, `enqueue`'s last.
        """
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.multi()
            pipe.hset(keys.api_question(question_id), "signal", state.model_dump_json())
            enqueue(pipe)
            return list(pipe.execute())

    def webhook(self, question_id: str) -> WebhookState | None:
        raw = reply(self.redis.hget(keys.api_question(question_id), "webhook"))
        return WebhookState.model_validate_json(raw) if raw else None


@dataclass(frozen=True)
class UnreadableQuestion:
    """A question record this version cannot read, as much as a listing can say."""

    id: str
    token: str
    team: str
    created_at: float
    error: str
    owner: str = ""


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
        token, team, owner = data.get("token", ""), data.get("team", ""), data.get("owner", "")
        return UnreadableQuestion(question_id, token, team, created, error, owner)
