"""Closing a question: an answer, an expiry or a cancel, in one atomic step.

`QuestionCloses` seals secret answers before they are stored, and opens them for the run.
`RunStore` is built on it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from redis import Redis
from redis.commands.core import Script

from workers.exceptions import SecretKeyMissing
from workers.interaction import Answer
from workers.store import job_ids, journal_names, keys, scripts
from workers.store.interrupt_records import CloseMode, InterruptRecord, RefusalReason
from workers.store.refusal import Refusal
from workers.store.replication import Replication
from workers.store.replies import as_text
from workers.store.run_writes import history_entry
from workers.store.sealed import SecretBox, split


@dataclass(frozen=True)
class Closed:
    """A close that went through.

    `again`: the answer is the one the question already holds. It came from the same delivery or
    person. Examples are a double click, or a resubmission after `UNCONFIRMED`. The first acceptance
    counted, recorded and queued it, so nothing is done twice.
    """

    again: bool = False


class QuestionCloses:
    """Answer, expire or cancel a question, mixed into `RunStore`."""

    # What `RunStore` gives it: its Redis client, sealing box, replication and scripts.
    redis: Redis
    box: SecretBox | None
    replication: Replication
    _close: Script
    record: Callable[..., bool]  # `RunTransitions.record`

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


def _bound_to(interrupt: InterruptRecord) -> dict[str, str]:
    """The digest of the facts an answer was given on, for its history entry."""
    return {"context_digest": interrupt.context_digest} if interrupt.context_digest else {}
