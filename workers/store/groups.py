"""`GroupStore`: questions asked at once (`ask_all`, `ask_any`, `ask_each`) in Redis.

A group's members are ordinary interrupts (`InterruptRecord`, with `group` set). So a member is
answered, refused, reminded and listed like any question. The group hash adds what members
share: how they resume the run (`mode`, `need`). For `ask_each`, it adds the one shared message
and which member is whose.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from redis import Redis

from workers.exceptions import StaleEpoch
from workers.interaction import Answer, GroupInfo
from workers.store import group_scripts, job_ids, keys, scripts
from workers.store.records import (
    CloseMode,
    GroupState,
    InterruptRecord,
    InterruptState,
    RefusalReason,
    RunRecord,
    message_fields,
)
from workers.store.refusal import Refusal
from workers.store.replication import Replication
from workers.store.replies import as_text, reply, text_hash


class GroupMode(StrEnum):
    """How a group resumes its run: after every answer, the first, or a quorum.

    A quorum counts people's own answers.
    """

    ALL = "all"
    ANY = "any"
    EACH = "each"


class GroupRecord(BaseModel):
    """The group hash, decoded."""

    model_config = ConfigDict(extra="ignore")

    id: str
    run_id: str
    mode: GroupMode
    need: int
    members: list[str]
    state: GroupState = GroupState.OPEN
    key: str = ""  # ask_each: the ask key the group is an attempt of
    people: dict[str, str] = Field(default_factory=dict)  # ask_each: user id -> their member's interrupt id
    message: dict[str, Any] = Field(default_factory=dict)  # ask_each: the one message the members share
    done_at: float | None = None

    @classmethod
    def from_hash(cls, data: dict[str, str]) -> GroupRecord:
        fields: dict[str, Any] = {k: v for k, v in data.items() if v != ""}
        for name in ("members", "people", "message"):
            if name in fields:
                fields[name] = json.loads(fields[name])
        return cls.model_validate(fields)


@dataclass(frozen=True)
class MemberClose:
    """What closing one member did: refused (`refusal`), or closed, perhaps completing the group.

    `UNCONFIRMED` is the one refusal that wrote. The master accepted the answer, and `done` and
    `dropped` say what that did. But fewer replicas than asked for confirmed it in time.
    """

    refusal: Refusal | None = None
    again: bool = False  # the member already held this answer (see `question_closes.Closed`): nothing new to do
    done: bool = False
    dropped: list[str] = field(default_factory=list)  # members closed as no longer needed by this step


@dataclass(frozen=True)
class NewMember:
    """One question about to open in a group: its interrupt's hash, its key's attempts."""

    fields: dict[str, str]
    journal_field: str
    attempts: list[str]


class GroupStore:
    """Opens, parks and closes groups, as `RunStore.groups`, one per process.

    `replication` is the `RunStore`'s. A member's answer waits for replicas as a single question's
    does.
    """

    def __init__(self, redis: Redis, replication: Replication | None = None) -> None:
        self.redis = redis
        self.replication = replication or Replication()
        self._open = redis.register_script(group_scripts.OPEN_GROUP)
        self._park = redis.register_script(group_scripts.PARK_GROUP)
        self._close = redis.register_script(group_scripts.CLOSE_MEMBER)

    def open(
        self,
        run: RunRecord,
        epoch: int,
        gid: str,
        mode: GroupMode,
        need: int,
        members: list[NewMember],
        *,
        key: str = "",
        people: dict[str, str] | None = None,
        journal: dict[str, Any] | None = None,
    ) -> tuple[GroupRecord, list[InterruptRecord]]:
        """Record the intent to ask every member (state `posting`) before posting anything."""
        group = {
            "id": gid,
            "run_id": run.id,
            "mode": mode.value,
            "need": str(need),
            "members": json.dumps([m.fields["id"] for m in members]),
            "state": GroupState.OPEN.value,
            "key": key,
            "people": json.dumps(people or {}),
        }
        entries = {m.journal_field: json.dumps(m.attempts) for m in members if m.journal_field}
        entries.update({k: json.dumps(v) for k, v in (journal or {}).items()})
        interrupts = {m.fields["id"]: {**m.fields, "group": gid} for m in members}
        res = self._open(
            keys=[keys.run(run.id), keys.journal(run.id), keys.group(gid)],
            args=[str(epoch), gid, keys.interrupt(""), json.dumps(group), json.dumps(entries), json.dumps(interrupts)],
        )
        if res == -1:
            raise StaleEpoch(run.id, epoch)
        return GroupRecord.from_hash(group), [InterruptRecord.from_hash(f) for f in interrupts.values()]

    def group(self, gid: str) -> GroupRecord | None:
        data = reply(self.redis.hgetall(keys.group(gid)))
        return GroupRecord.from_hash(text_hash(data)) if data else None

    def members(self, group: GroupInfo) -> list[InterruptRecord]:
        """Every member of `group`, in the order they were asked, in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        for iid in group.members:
            pipe.hgetall(keys.interrupt(iid))
        return [InterruptRecord.from_hash(text_hash(d)) for d in pipe.execute() if d]

    def member_for(self, gid: str, user: str) -> InterruptRecord | None:
        """`user`'s own member of `ask_each` group `gid`.

        None when they were not asked, or there is no such group.
        """
        raw = reply(self.redis.hget(keys.group(gid), "people"))
        iid = json.loads(raw).get(user) if raw else None
        data = reply(self.redis.hgetall(keys.interrupt(iid))) if iid else None
        return InterruptRecord.from_hash(text_hash(data)) if data else None

    def set_message(self, gid: str, message: dict[str, Any]) -> None:
        """Record where an `ask_each` group's shared message was posted, on all its records.

        The group and every member get it.
        """
        group = self.group(gid)
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(keys.group(gid), "message", json.dumps(message))
        for iid in group.members if group else []:
            pipe.hset(keys.interrupt(iid), mapping=message_fields(message))
        pipe.execute()

    def park(self, run_id: str, epoch: int, gid: str) -> None:
        res = self._park(
            keys=[
                keys.run(run_id),
                keys.group(gid),
                keys.leases_index(),
                keys.expiry_index(),
                keys.remind_index(),
                keys.escalate_index(),
            ],
            args=[
                run_id,
                keys.status_index(""),
                str(epoch),
                repr(time.time()),
                gid,
                keys.waiting_index(""),
                keys.interrupt(""),
            ],
        )
        if res != 1:
            raise StaleEpoch(run_id, epoch)

    def close(
        self,
        interrupt: InterruptRecord,
        mode: CloseMode,
        actor: str,
        entry: str,
        answers: list[Answer] | None = None,
        *,
        token: str = "",
        counts: bool = True,
        now: float | None = None,
        answered_team: str = "",
    ) -> MemberClose:
        """Answer, expire or cancel a member in one atomic step, with `entry` as history.

        With `replication.min_replicas` set, an answer is followed by `WAIT` on the same connection
        (`Replication.run_and_wait`). An answer confirmed by fewer replicas comes back `UNCONFIRMED`,
        kept on the master. The same person's same answers are then the same acceptance.
        """
        now = time.time() if now is None else now
        answers_json = json.dumps([a.model_dump(exclude_none=True) for a in answers or []])
        close_keys = [
            keys.run(interrupt.run_id),
            keys.interrupt(interrupt.id),
            keys.group(interrupt.group),
            keys.expiry_index(),
            keys.remind_index(),
            keys.accepted_index(),
            keys.history(interrupt.run_id),
            keys.receipts_pending(),
        ]
        resume = job_ids.resume(interrupt.run_id, interrupt.group)
        close_args = [
            *scripts.close_argv(interrupt.id, interrupt.run_id, now, mode, actor, answers_json, token, entry, resume),
            keys.interrupt(""),
            "1" if counts else "0",
            answered_team,
            keys.closed_channel(),
        ]
        res, short = self.replication.closing(
            self.redis, self._close, close_keys, close_args, answer=mode == CloseMode.ANSWER
        )
        if res[0] == 0:
            return MemberClose(refusal=Refusal.from_reply(res))
        again = res[0] == 2
        done, dropped = (False, []) if again else (bool(int(res[1])), [as_text(x) for x in res[2:]])
        if short is not None:  # accepted on the master, not yet on enough replicas: kept, and resubmittable
            unconfirmed = Refusal(RefusalReason.UNCONFIRMED, replicas=short, again=again)
            return MemberClose(unconfirmed, again=again, done=done, dropped=dropped)
        return MemberClose(again=again, done=done, dropped=dropped)

    def mark_shown(self, interrupt_id: str) -> None:
        """Note that a member's close is shown on its message, so the resume skips it."""
        self.redis.hset(keys.interrupt(interrupt_id), "shown", "1")

    def drop_synchronously(self, interrupt: InterruptRecord) -> None:
        """Close a member a synchronous host never asked, since the run went on without it."""
        self.redis.hset(
            keys.interrupt(interrupt.id), mapping={"state": InterruptState.NOT_NEEDED.value, "closed_by": "parley"}
        )
