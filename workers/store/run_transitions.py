"""A worker's writes to its run, each fenced by the run's epoch.

`RunTransitions` moves a run between statuses, claims a queued one and journals its steps.
It also opens and parks the run's questions. `RunStore` is built on it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.commands.core import Script

from workers.exceptions import StaleEpoch
from workers.interaction import ContextChange, Request
from workers.store import journal_names, keys
from workers.store.away import AwayStore
from workers.store.interrupt_records import InterruptRecord, message_fields
from workers.store.replies import as_text, text_hash
from workers.store.run_records import RunRecord, RunStatus
from workers.store.run_writes import interrupt_fields, park_call, transition_call


@dataclass(frozen=True)
class Claim:
    """A worker's claim on a queued run: new epoch, run and journal, or why not."""

    epoch: int
    old: str
    refused: str = ""
    record: RunRecord | None = None
    journal: dict[str, Any] | None = None
    interrupt: InterruptRecord | None = None  # the question the run was parked on, if it has one


class RunTransitions:
    """Worker-side transitions of a run and its questions, mixed into `RunStore`."""

    # What `RunStore` gives it: its Redis client, scripts and away store.
    redis: Redis
    away: AwayStore
    _transition: Script
    _claim: Script
    _journal: Script
    _open: Script
    _park: Script

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


def _pairs(flat: list[Any]) -> dict[Any, Any]:
    """A Lua HGETALL reply (a flat list) as a dict."""
    return dict(zip(flat[0::2], flat[1::2], strict=True))
