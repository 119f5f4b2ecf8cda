"""`RunStore`: reads and atomic transitions of runs and their questions in Redis.

`RunStore` reads runs, their journals and histories, and creates them. It is built on
`RunTransitions` (`run_transitions.py`), `QuestionCloses` (`question_closes.py`) and
`RunIndexes` (`run_indexes.py`). How its writes are made is in `run_writes.py`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from redis import Redis

from workers.exceptions import RunNotFound
from workers.store import ids, journal_names, keys, scripts
from workers.store.away import AwayStore
from workers.store.claims import ClaimStore
from workers.store.groups import GroupStore
from workers.store.ids import new_id as new_id  # re-exported for callers that mint run ids here
from workers.store.interrupt_records import InterruptRecord
from workers.store.people import PeopleStore
from workers.store.pieces import read_field, spread, stale_pieces
from workers.store.proposals import ProposalStore
from workers.store.question_closes import QuestionCloses
from workers.store.replication import Replication
from workers.store.replies import as_text, reply, text_hash
from workers.store.retention import Retention
from workers.store.run_indexes import RunIndexes
from workers.store.run_records import STARTED_FIELDS, HistoryEntry, RunRecord, with_start
from workers.store.run_transitions import RunTransitions
from workers.store.run_writes import history_entry, stage_create
from workers.store.sealed import SecretBox
from workers.store.starts import StartStore

RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a run id can be: `new_id`'s letters, and never the `:` that separates the parts of a Redis key."""


class RunStore(RunTransitions, QuestionCloses, RunIndexes):
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
        """The run's history, oldest first, its start made from the run's hash (`run_records.with_start`)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.lrange(keys.history(run_id), 0, -1)
        pipe.hmget(keys.run(run_id), list(STARTED_FIELDS))
        raw, start = pipe.execute()
        fields = {k: None if v is None else as_text(v) for k, v in zip(STARTED_FIELDS, start, strict=True)}
        return with_start([HistoryEntry.model_validate_json(x) for x in raw], fields)

    def add_history(self, run_id: str, event: str, by: str = "", **detail: Any) -> None:
        self.redis.rpush(keys.history(run_id), history_entry(event, by, **detail))

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
