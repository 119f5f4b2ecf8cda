"""`RunStore`: reads and atomic transitions of runs and their questions in Redis."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from redis import Redis

from workers.exceptions import RunNotFound, SecretKeyMissing, StaleEpoch
from workers.interaction import Answer, ContextChange, Request
from workers.logs import Log
from workers.store import ids, job_ids, journal_names, keys, scripts
from workers.store.away import AwayStore
from workers.store.claims import ClaimStore
from workers.store.groups import GroupStore
from workers.store.ids import new_id as new_id  # re-exported for callers that mint run ids here
from workers.store.people import PeopleStore
from workers.store.pieces import read_field, spread, stale_pieces
from workers.store.proposals import ProposalStore
from workers.store.records import (
    STARTED_FIELDS,
    CloseMode,
    HistoryEntry,
    InterruptRecord,
    InterruptState,
    RefusalReason,
    RunRecord,
    RunStatus,
    message_fields,
    stored_request,
    with_start,
)
from workers.store.refusal import Refusal
from workers.store.replication import Replication
from workers.store.replies import as_text, reply, text_hash
from workers.store.retention import Retention
from workers.store.sealed import SecretBox, split
from workers.store.starts import StartStore


@dataclass(frozen=True)
class Claim:
    """A worker's claim on a queued run: new epoch, run and journal, or why not."""

    epoch: int
    old: str
    refused: str = ""
    record: RunRecord | None = None
    journal: dict[str, Any] | None = None
    interrupt: InterruptRecord | None = None  # the question the run was parked on, if it has one


@dataclass(frozen=True)
class Closed:
    """A close that went through.

    `again`: the answer is the one the question already holds. It came from the same delivery or
    person. Examples are a double click, or a resubmission after `UNCONFIRMED`. The first acceptance
    counted, recorded and queued it, so nothing is done twice.
    """

    again: bool = False


log = Log("parley.store")
RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a run id can be: `new_id`'s letters, and never the `:` that separates the parts of a Redis key."""


def _run_or_unreadable(run_id: str, data: dict[str, str]) -> RunRecord:
    """The run, or a stand-in saying it is unreadable, so a listing goes on."""
    try:
        return RunRecord.from_hash(data)
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError and bad JSON are ValueErrors
        log.error("a run's record cannot be read", run_id=run_id, error=repr(exc))
        return RunRecord.unreadable(run_id, data, str(exc).splitlines()[0])


class RunStore:
    """All of a run's state, behind one class given its Redis connection.

    `box` seals secret answers (from `PARLEY_SECRET_KEY`). Without it, a secret answer is refused.
    `replication` says how many replicas must hold an accepted answer before the ack.
    """

    def __init__(self, redis: Redis, box: SecretBox | None = None, replication: Replication | None = None) -> None:
        self.redis = redis
        self.box = box
        self.replication = replication or Replication()
        self._transition = redis.register_script(scripts.TRANSITION)
        self._claim = redis.register_script(scripts.CLAIM)
        self._journal = redis.register_script(scripts.JOURNAL)
        self._open = redis.register_script(scripts.OPEN_INTERRUPT)
        self._park = redis.register_script(scripts.PARK)
        self._thread = redis.register_script(scripts.THREAD)
        self._close = redis.register_script(scripts.CLOSE)
        self._unwatch_queued = redis.register_script(scripts.UNWATCH_QUEUED)
        self.retention = Retention(redis)  # finding and deleting finished runs past their keeping time
        self.groups = GroupStore(redis, self.replication)  # questions asked at once: ask_all, ask_any, ask_each
        self.people = PeopleStore(redis)  # who may answer an open question: groups, escalation, reassignment
        self.claims = ClaimStore(redis)  # one person takes a question put to many (`Request.claim`)
        self.away = AwayStore(redis)  # who is away, and whose questions go to whom meanwhile
        self.proposals = ProposalStore(redis)  # answers a model read from a reply, until the replier confirms
        self.starts = StartStore(redis)  # how fast runs may be started from Slack

    # ---- creation and reads -------------------------------------------------
    def create(
        self, agent: str, text: str, started_by: str, conversation: dict[str, Any], run_id: str | None = None
    ) -> RunRecord:
        """Create a queued run with `run_id`, chosen beforehand (admitted by `starts.admit`)."""
        run_id = run_id or new_id(ids.RUN)
        pipe = self.redis.pipeline(transaction=True)
        written = stage_create(pipe, run_id, agent, text, started_by, conversation, time.time())
        pipe.execute()
        return RunRecord.from_hash(written)  # what was just written: no read back

    def get(self, run_id: str) -> RunRecord:
        """The run `run_id`, or `RunNotFound`.

        `RunNotFound` also when `run_id` cannot be a run's id. A tampered `<id>:history` would otherwise
        name the run's history, journal or another key.
        """
        if RUN_ID.fullmatch(run_id) is None:
            raise RunNotFound(run_id)
        data = reply(self.redis.hgetall(keys.run(run_id)))
        if not data:
            raise RunNotFound(run_id)
        return RunRecord.from_hash(text_hash(data))

    def find(self, run_id: str) -> RunRecord | None:
        try:
            return self.get(run_id)
        except RunNotFound:
            return None

    def conversation(self, run_id: str) -> dict[str, Any]:
        """The run's conversation as Redis has it now, with any thread a host started."""
        raw = read_field(self.redis, keys.run(run_id), "conversation")
        if raw is None:
            raise RunNotFound(run_id)
        conversation: dict[str, Any] = json.loads(raw)
        return conversation

    def interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        data = reply(self.redis.hgetall(keys.interrupt(interrupt_id)))
        return InterruptRecord.from_hash(text_hash(data)) if data else None

    def interrupts(self, interrupt_ids: Sequence[str]) -> dict[str, InterruptRecord | None]:
        """Several questions read in one round trip, None for each one gone."""
        pipe = self.redis.pipeline(transaction=False)
        for iid in interrupt_ids:
            pipe.hgetall(keys.interrupt(iid))
        found = pipe.execute()
        return {
            iid: InterruptRecord.from_hash(text_hash(data)) if data else None
            for iid, data in zip(interrupt_ids, found, strict=True)
        }

    def journal(self, run_id: str) -> dict[str, Any]:
        """Every journal entry of `run_id`, decoded."""
        return {as_text(k): json.loads(v) for k, v in reply(self.redis.hgetall(keys.journal(run_id))).items()}

    def journal_get(self, run_id: str, field: str) -> Any:
        raw = reply(self.redis.hget(keys.journal(run_id), field))
        return None if raw is None else json.loads(raw)

    def history(self, run_id: str) -> list[HistoryEntry]:
        """The run's history, oldest first, its start made from the run's hash (`records.with_start`)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.lrange(keys.history(run_id), 0, -1)
        pipe.hmget(keys.run(run_id), list(STARTED_FIELDS))
        raw, start = pipe.execute()
        fields = {k: None if v is None else as_text(v) for k, v in zip(STARTED_FIELDS, start, strict=True)}
        return with_start([HistoryEntry.model_validate_json(x) for x in raw], fields)

    def add_history(self, run_id: str, event: str, by: str = "", **detail: Any) -> None:
        self.redis.rpush(keys.history(run_id), history_entry(event, by, **detail))

    # ---- worker-side transitions (fenced by epoch) --------------------------
    def transition(
        self, run_id: str, allowed: Iterable[RunStatus], new: RunStatus, **options: Any
    ) -> tuple[bool, str, str]:
        """Move `run_id` to `new` if it is in `allowed`.

        Returns (done, epoch or reason, old status). `options` are `transition_call`'s. The epoch fences
        a worker's write, and the lease goes with it. A history entry (from `history_entry`) is appended
        in the same atomic step. `journal` entries are recorded in it too, and field values set for the
        run.
        """
        call_keys, argv = transition_call(run_id, allowed, new, **options)
        done, second, old = self._transition(keys=call_keys, args=argv)
        return bool(done), as_text(second), as_text(old)

    def claim(self, run_id: str, lease_until: float) -> Claim:
        """Move a queued run to running under a new epoch and lease.

        The same step reads the run, its journal and the question it was parked on. So an execution
        starts with one round trip.
        """
        # CLAIM takes TRANSITION's arguments without field pairs, its journal as fifth key, and the
        # interrupt key prefix last.
        call_keys, argv = transition_call(
            run_id, [RunStatus.QUEUED], RunStatus.RUNNING, lease=repr(lease_until), bump_epoch=True
        )
        reply = self._claim(keys=[*call_keys[:4], keys.journal(run_id)], args=[*argv, keys.interrupt("")])
        if not reply[0]:
            return Claim(epoch=0, refused=as_text(reply[1]), old=as_text(reply[2]))
        run, journal, question = _pairs(reply[3]), _pairs(reply[4]), _pairs(reply[5])
        return Claim(
            epoch=int(as_text(reply[1])),
            old=as_text(reply[2]),
            record=RunRecord.from_hash(text_hash(run)),
            journal={as_text(k): json.loads(v) for k, v in journal.items()},
            interrupt=InterruptRecord.from_hash(text_hash(question)) if question else None,
        )

    def record(
        self,
        run_id: str,
        epoch: int,
        field: str,
        value: Any,
        *,
        only_if_absent: bool = False,
        history: str = "",
        also: dict[str, Any] | None = None,
    ) -> bool:
        """Journal `value` under `field`, or raise `StaleEpoch` if this worker lost the run.

        `history` (from `history_entry`) is appended in the same atomic step when the value is written.
        `also` holds more entries written with it, whatever `only_if_absent` finds.
        """
        argv = [str(epoch), field, json.dumps(value), "1" if only_if_absent else "0", history, journal_names.STEP]
        for name, entry in (also or {}).items():
            argv += [name, json.dumps(entry)]
        res = self._journal(keys=[keys.run(run_id), keys.journal(run_id), keys.history(run_id)], args=argv)
        if res == -1:
            raise StaleEpoch(run_id, epoch)
        return bool(res)

    def open_interrupt(
        self,
        run: RunRecord,
        epoch: int,
        key: str,
        attempts: list[str],
        request: Request,
        assignees: list[str],
        *,
        context: str = "",
        changes: list[ContextChange] | None = None,
    ) -> InterruptRecord:
        """Record the intent to ask, before posting anything.

        This is attempt `len(attempts)` of `key`. `context` is the JSON of the facts the answer will be
        bound to. It is digested in canonical form. `changes` is what differed from the previous
        attempt's facts, voiding its answer.
        """
        iid = attempts[-1]
        team = str(run.conversation.get("team", ""))
        now = time.time()
        asked = self.away.stand_ins(team, assignees, now)  # people away: their delegates are asked
        fields = interrupt_fields(
            iid,
            run.id,
            team,
            key,
            len(attempts),
            request,
            asked.people,
            now,
            context=context,
            changes=changes,
            standing_in=asked.standing_in,
        )
        if run.conversation.get("enterprise"):
            fields["enterprise"] = str(run.conversation["enterprise"])
        argv: list[Any] = [str(epoch), journal_names.ask(key), json.dumps(attempts), iid]
        for name, value in fields.items():
            argv += [name, value]
        if self._open(keys=[keys.run(run.id), keys.journal(run.id), keys.interrupt(iid)], args=argv) == -1:
            raise StaleEpoch(run.id, epoch)
        return InterruptRecord.from_hash(fields)

    def set_message(self, interrupt_id: str, message: dict[str, Any]) -> None:
        """Remember where a host posted the question, so it is never posted again."""
        self.redis.hset(keys.interrupt(interrupt_id), mapping=message_fields(message))

    def park(self, run_id: str, epoch: int, interrupt: InterruptRecord) -> None:
        park_keys, park_args = park_call(run_id, epoch, time.time(), interrupt.id, interrupt.message)
        res = self._park(keys=park_keys, args=park_args)
        if res != 1:
            raise StaleEpoch(run_id, epoch)

    # ---- closing a question: answer, expiry, cancel -------------------------
    def close(
        self,
        interrupt: InterruptRecord,
        mode: CloseMode,
        actor: str,
        answers: list[Answer] | None = None,
        token: str = "",
        now: float | None = None,
        answered_team: str = "",
    ) -> Refusal | Closed:
        """Answer, expire or cancel `interrupt` in one atomic step.

        `answered_team` is the answerer's workspace where it is not the question's (a shared channel).

        A `Refusal` wrote nothing. Secret values are sealed and kept apart from the answers, which keep
        `SECRET_MASK`. A secret without a key raises `SecretKeyMissing`, writing nothing. `UNCONFIRMED`
        is the exception. The master accepted the answer, but too few replicas confirmed it in time. The
        minimum is `replication.min_replicas` (`workers.store.replication`). Its `replicas` say how many
        did. `again` says whether the answer was already the question's.
        """
        now = time.time() if now is None else now
        stored, sealed = self._seal(answers or [])
        dumped = [a.model_dump(exclude_none=True) for a in stored]
        answers_json = json.dumps(dumped)
        entry = history_entry(
            CloseMode(mode).event,
            actor,
            interrupt_id=interrupt.id,
            key=interrupt.key,
            attempt=interrupt.attempt,
            answers=dumped,
            **_bound_to(interrupt),
        )
        close_keys = [
            keys.run(interrupt.run_id),
            keys.interrupt(interrupt.id),
            keys.expiry_index(),
            keys.remind_index(),
            keys.accepted_index(),
            keys.leases_index(),
            keys.history(interrupt.run_id),
            keys.secrets(interrupt.run_id),
            keys.receipts_pending(),
        ]
        resume = job_ids.resume(interrupt.run_id, interrupt.id)
        close_args = [
            *scripts.close_argv(interrupt.id, interrupt.run_id, now, mode, actor, answers_json, token, entry, resume),
            sealed,
            keys.closed_channel(),
            answered_team,
        ]
        res, short = self.replication.closing(
            self.redis, self._close, close_keys, close_args, answer=mode == CloseMode.ANSWER
        )
        if res[0] == 0:
            return Refusal.from_reply(res)
        again = res[0] == 2
        if short is not None:
            # Accepted on the master, not yet on a replica: kept, and a resubmission is the same acceptance.
            return Refusal(RefusalReason.UNCONFIRMED, replicas=short, again=again)
        return Closed(again=again)

    def close_synchronously(self, interrupt: InterruptRecord, answers: list[Answer], *, by: str, epoch: int) -> None:
        """Record answers a synchronous host (the terminal) collected in-process.

        Secrets are sealed, as in `close`.
        """
        stored, sealed = self._seal(answers)
        answers_json = json.dumps([a.model_dump(exclude_none=True) for a in stored])
        self.record(interrupt.run_id, epoch, journal_names.answered(interrupt.id), by)
        now = time.time()
        pipe = self.redis.pipeline(transaction=True)
        if sealed:
            pipe.hset(keys.secrets(interrupt.run_id), interrupt.id, sealed)
        pipe.hset(
            keys.interrupt(interrupt.id),
            mapping={"state": "answered", "answers": answers_json, "answered_by": by, "answered_at": repr(now)},
        )
        pipe.rpush(
            keys.history(interrupt.run_id),
            history_entry(
                "answered",
                by,
                interrupt_id=interrupt.id,
                key=interrupt.key,
                attempt=interrupt.attempt,
                answers=json.loads(answers_json),
                **_bound_to(interrupt),
            ),
        )
        pipe.zadd(keys.receipts_pending(), {interrupt.id: now})  # its signed receipt is written from this mark
        pipe.execute()

    def _seal(self, answers: list[Answer]) -> tuple[list[Answer], str]:
        """The answers as stored (secrets masked), and their secret values sealed.

        The sealed text is '' when there are none.
        """
        stored, values = split(answers)
        if not values:
            return stored, ""
        if self.box is None:
            raise SecretKeyMissing()
        return stored, self.box.seal(values)

    def secret_answers(self, run_id: str, interrupt_id: str) -> dict[str, str] | None:
        """The secret values given to `interrupt_id`, opened, or None if none are held.

        None means the run ended once since. Every ending deletes them, and a retried run asks again.
        """
        raw = self.redis.hget(keys.secrets(run_id), interrupt_id)
        if raw is None:
            return None
        if self.box is None:
            raise SecretKeyMissing()
        return self.box.open(as_text(raw))

    # ---- the run's conversation ----------------------------------------------------
    def set_thread(self, run_id: str, conversation: dict[str, Any]) -> None:
        """Record the run's host-started thread, to find the run by it later."""
        thread = keys.thread(conversation["channel"], conversation["thread_ts"])
        written = spread("conversation", json.dumps(conversation))
        stale = stale_pieces("conversation", written)
        argv = [run_id, str(len(stale)), *stale, *(x for pair in written.items() for x in pair)]
        self._thread(keys=[keys.run(run_id), thread], args=argv)

    def thread_run(self, channel: str, thread_ts: str) -> str | None:
        """The run whose conversation is this thread, whichever team delivered the event."""
        raw = self.redis.get(keys.thread(channel, thread_ts))
        return None if raw is None else as_text(raw)

    def first_delivery(self, delivery_id: str, ttl: float) -> bool:
        """True the first time `delivery_id` is seen within `ttl` seconds (Slack redelivers)."""
        return bool(self.redis.set(keys.seen_event(delivery_id), 1, nx=True, ex=max(1, int(ttl))))

    # ---- admin writes ---------------------------------------------------------------
    def forget_final(self, run_id: str) -> None:
        """Forget that the final message was posted, so a retry posts its own."""
        self.redis.hdel(keys.journal(run_id), journal_names.effect(journal_names.FINAL))

    def forget_attempt(self, run_id: str, key: str, interrupt_id: str) -> bool:
        """Drop `interrupt_id` as ask `key`'s last attempt, so a replay asks afresh."""
        field = journal_names.ask(key)
        attempts = self.journal_get(run_id, field) or []
        if not attempts or attempts[-1] != interrupt_id:
            return False
        self.redis.hset(keys.journal(run_id), field, json.dumps(attempts[:-1]))
        return True

    # ---- indexes --------------------------------------------------------------
    def runs(self, run_ids: Iterable[str]) -> list[RunRecord]:
        """Several runs in one round trip, in order; ids with no run are skipped."""
        run_ids = list(run_ids)
        pipe = self.redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hgetall(keys.run(run_id))
        return [_run_or_unreadable(i, text_hash(d)) for i, d in zip(run_ids, pipe.execute(), strict=True) if d]

    def list_ids(self, status: RunStatus | None, *, offset: int = 0, limit: int = 20) -> list[str]:
        """Run ids newest first, one page of an index; never a keyspace scan."""
        index = keys.all_runs_index() if status is None else keys.status_index(status)
        return [as_text(x) for x in reply(self.redis.zrevrange(index, offset, offset + limit - 1))]

    def count(self, status: RunStatus) -> int:
        return int(reply(self.redis.zcard(keys.status_index(status))))

    def counts(self) -> dict[str, int]:
        pipe = self.redis.pipeline(transaction=False)
        for s in RunStatus:
            pipe.zcard(keys.status_index(s))
        return {s.value: int(n) for s, n in zip(RunStatus, pipe.execute(), strict=True)}

    def waiting_on(self, user: str, *, limit: int = 20) -> list[str]:
        return [as_text(x) for x in reply(self.redis.zrange(keys.waiting_index(user), 0, limit - 1))]

    def due_expiries(self, now: float, limit: int = 100) -> list[str]:
        """Open questions whose deadline has passed."""
        return self._due(keys.expiry_index(), now, limit)

    def due_reminders(self, now: float, limit: int = 100) -> list[str]:
        """Open questions whose assignees are due a reminder."""
        return self._due(keys.remind_index(), now, limit)

    def due_leases(self, now: float, limit: int = 100) -> list[str]:
        """Running runs whose worker's lease has lapsed."""
        return self._due(keys.leases_index(), now, limit)

    def due_queued(self, before: float, limit: int = 100) -> list[str]:
        """Runs queued before `before` that should have a job.

        A start, an answer or a retry queues them. The queued status index lists them,
        each scored by when the run was last queued.
        """
        return self._due(keys.status_index(RunStatus.QUEUED), before, limit)

    def unschedule_expiry(self, interrupt_id: str) -> None:
        """Stop watching a question that is no longer open for its expiry."""
        self.redis.zrem(keys.expiry_index(), interrupt_id)

    def take_reminder(self, interrupt_id: str) -> bool:
        """Claim a due reminder, or False if another sweep took it."""
        return bool(self.redis.zrem(keys.remind_index(), interrupt_id))

    def schedule_reminder(self, interrupt_id: str, at: float) -> None:
        """Remind again at `at`, unless the sweep finds the question closed."""
        self.redis.zadd(keys.remind_index(), {interrupt_id: at})

    def unwatch_queued(self, run_id: str) -> None:
        """Stop watching a run for a missing job, once it is gone or no longer queued."""
        self._unwatch_queued(keys=[keys.run(run_id), keys.status_index(RunStatus.QUEUED)], args=[run_id])

    def _due(self, index_key: str, now: float, limit: int) -> list[str]:
        return [as_text(x) for x in reply(self.redis.zrangebyscore(index_key, "-inf", now, start=0, num=limit))]


def stage_create(
    pipe: Any, run_id: str, agent: str, text: str, started_by: str, conversation: dict[str, Any], now: float
) -> dict[str, str]:
    """Queue on `pipe` every write creating a queued run, returning its hash.

    Benchmarks also use it for seeding.
    """
    record = {
        "id": run_id,
        "agent": agent,
        "text": text,
        "started_by": started_by,
        **spread("conversation", json.dumps(conversation)),
        "status": RunStatus.QUEUED.value,
        "created_at": repr(now),
        "updated_at": repr(now),
        "epoch": "0",
        "failures": "0",
        "job": job_ids.first(run_id),
    }
    pipe.hset(keys.run(run_id), mapping=record)
    pipe.zadd(keys.status_index(RunStatus.QUEUED), {run_id: now})
    pipe.zadd(keys.all_runs_index(), {run_id: now})
    # no history entry: the history's start is the hash (`records.with_start`)
    return record


def interrupt_fields(
    iid: str,
    run_id: str,
    team: str,
    key: str,
    attempt: int,
    request: Request,
    assignees: list[str],
    now: float,
    *,
    context: str = "",
    changes: list[ContextChange] | None = None,
    standing_in: dict[str, list[dict[str, float | str]]] | None = None,
) -> dict[str, str]:
    """The hash of a question about to be posted, with the facts bound to it.

    Its state is `posting`.
    """
    expires_in = request.expires_in
    bound = spread("context", context) if context else {}  # its digest is read from it (`records.context_digest`)
    if changes:
        bound.update(spread("context_changes", json.dumps([c.model_dump(mode="json") for c in changes])))
    if standing_in:
        bound["standing_in"] = json.dumps(standing_in)
    return {
        **bound,
        "id": iid,
        "run_id": run_id,
        "key": key,
        "attempt": str(attempt),
        **spread("request", stored_request(request)),
        "assignees": json.dumps(assignees),
        "asked_at": repr(now),
        "expires_at": repr(now + expires_in) if expires_in else "",
        **_reminders(request, now),
        **_escalation(request, now),
        "state": InterruptState.POSTING.value,
        "team": team,
    }


def _reminders(request: Request, now: float) -> dict[str, str]:
    """When reminders are due: at half-life, then a last call before expiry.

    The last call comes a lead before expiry. If due before half-life, it is the only reminder. Two
    close together say nothing more.
    """
    if not request.expires_in:
        return {"remind_at": ""}
    half, lead = now + request.expires_in / 2, request.last_call_lead()
    if lead is None:
        return {"remind_at": repr(half)}
    last = now + request.expires_in - lead
    return {"remind_at": repr(min(half, last)), "last_call_at": repr(last)}


def _escalation(request: Request, now: float) -> dict[str, str]:
    """When and to whom an unanswered question is escalated (`workers.store.people`)."""
    if request.escalate_after is None:
        return {}
    return {"escalate_at": repr(now + request.escalate_after), "escalate_to": json.dumps(request.escalate_to)}


def _bound_to(interrupt: InterruptRecord) -> dict[str, str]:
    """The digest of the facts an answer was given on, for its history entry."""
    return {"context_digest": interrupt.context_digest} if interrupt.context_digest else {}


def history_entry(event: str, by: str = "", **detail: Any) -> str:
    """One history line as stored, for `add_history` or a recording transition."""
    return HistoryEntry(at=time.time(), event=event, by=by, detail=detail).model_dump_json()


def _transition_keys(run_id: str) -> list[str]:
    return [keys.run(run_id), keys.leases_index(), keys.accepted_index(), keys.history(run_id)]


def park_call(
    run_id: str, epoch: int, now: float, interrupt_id: str, message: dict[str, Any]
) -> tuple[list[str], list[Any]]:
    """The PARK script's keys and arguments, for `RunStore.park` and the bench's seeding."""
    park_keys = [
        keys.run(run_id),
        keys.interrupt(interrupt_id),
        keys.leases_index(),
        keys.expiry_index(),
        keys.remind_index(),
        keys.escalate_index(),
    ]
    args = [run_id, keys.status_index(""), str(epoch), repr(now), interrupt_id, keys.waiting_index("")]
    return park_keys, [*args, *message_fields(message).values()]


def transition_call(
    run_id: str,
    allowed: Iterable[RunStatus],
    new: RunStatus,
    *,
    epoch: int | None = None,
    lease: str = "keep",
    bump_epoch: bool = False,
    failures: int = 0,
    history: str = "",
    journal: dict[str, Any] | None = None,
    now: float | None = None,
    **fields: Any,
) -> tuple[list[str], list[Any]]:
    """The KEYS and ARGV of one TRANSITION call (see `RunStore.transition`).

    It also serves a caller running the script itself, say in a pipeline.
    """
    argv: list[Any] = [  # in the order `scripts.TRANSITION` documents
        run_id,
        keys.status_index(""),
        " ".join(s.value for s in allowed),
        "" if epoch is None else str(epoch),
        new.value,
        repr(time.time() if now is None else now),
        lease,
        "1" if bump_epoch else "0",
        str(failures),
        history,
        json.dumps({k: json.dumps(v) for k, v in journal.items()}) if journal else "",
    ]
    for name, value in fields.items():
        argv += [name, value if isinstance(value, str) else json.dumps(value)]
    # The run's sealed secrets go too when it ends (TRANSITION's fifth key; CLAIM never ends a run).
    return [*_transition_keys(run_id), keys.secrets(run_id), keys.journal(run_id)], argv


def _pairs(flat: list[Any]) -> dict[Any, Any]:
    """A Lua HGETALL reply (a flat list) as a dict."""
    return dict(zip(flat[0::2], flat[1::2], strict=True))
