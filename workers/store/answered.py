"""An API question as its answer left it, read at once.

That is its record, its run and its closed question or questions. The process that accepts an
answer announces the question's outcome at once (`workers.questions.accepted`). It does so on
the path that acknowledges the click. So the records are read there in one round trip, a
quorum's members in a second, instead of one each.
"""

from __future__ import annotations

from redis import Redis

from workers.store import keys, question_hashes
from workers.store.groups import GroupRecord
from workers.store.records import ApiQuestionRecord, InterruptRecord, RunRecord
from workers.store.replies import text_hash
from workers.store.runs import RUN_ID


def read_answered(
    redis: Redis, run_id: str, interrupt_id: str
) -> tuple[ApiQuestionRecord | None, RunRecord | None, InterruptRecord | None]:
    """The API's record of question `run_id`, its run, and its question `interrupt_id`.

    Each is None when it is not there.
    """
    if RUN_ID.fullmatch(run_id) is None:  # not a run's id: it could name another key
        return None, None, None
    pipe = redis.pipeline(transaction=False)
    pipe.hgetall(keys.api_question(run_id))
    pipe.hgetall(keys.run(run_id))
    pipe.hgetall(keys.interrupt(interrupt_id))
    question, run, interrupt = (text_hash(d) for d in pipe.execute())
    question = _whole(redis, run_id, question, {interrupt_id: interrupt})
    return (
        ApiQuestionRecord.from_hash(question) if question else None,
        RunRecord.from_hash(run) if run else None,
        InterruptRecord.from_hash(interrupt) if interrupt else None,
    )


def read_completed(
    redis: Redis, run_id: str, group_id: str
) -> tuple[ApiQuestionRecord | None, RunRecord | None, GroupRecord | None, list[InterruptRecord]]:
    """The API's record of quorum question `run_id`, its run, its group `group_id` and the group's members."""
    if RUN_ID.fullmatch(run_id) is None:
        return None, None, None, []
    pipe = redis.pipeline(transaction=False)
    pipe.hgetall(keys.api_question(run_id))
    pipe.hgetall(keys.run(run_id))
    pipe.hgetall(keys.group(group_id))
    question, run, group = (text_hash(d) for d in pipe.execute())
    question = _whole(redis, run_id, question, {})
    record = GroupRecord.from_hash(group) if group else None
    members: list[InterruptRecord] = []
    if record is not None:
        pipe = redis.pipeline(transaction=False)
        for iid in record.members:
            pipe.hgetall(keys.interrupt(iid))
        members = [InterruptRecord.from_hash(text_hash(d)) for d in pipe.execute() if d]
    return (
        ApiQuestionRecord.from_hash(question) if question else None,
        RunRecord.from_hash(run) if run else None,
        record,
        members,
    )


def _whole(redis: Redis, run_id: str, question: dict[str, str], read: dict[str, dict[str, str]]) -> dict[str, str]:
    """The API's record made whole, its request and context put back (`question_hashes`).

    They come from the interrupt that holds them, when it was just read. Else they take one
    more round trip.
    """
    asked = question.get(question_hashes.ASKED)
    if not asked or any(question_hashes.referred(name) for name in question):
        return question
    held = read.get(asked)
    if not held:
        [whole] = question_hashes.read(redis, [run_id])
        return whole
    return {**question, **{name: value for name, value in held.items() if question_hashes.referred(name)}}
