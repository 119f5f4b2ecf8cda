"""The API's record of a question, read whole though its request may live in the question.

An API question's request and context are also what its run asks: once the run's question
(its interrupt) holds them, the API's record names that interrupt (`asked`) and leaves
them out, so a pending question keeps its request once. Reads put them back from the
interrupt. A record written before, or never referred (a quorum's, one a worker posted),
holds them itself and reads as it did.
"""

from __future__ import annotations

from collections.abc import Iterable

from redis import Redis

from workers.store import keys
from workers.store.records import ApiQuestionRecord
from workers.store.replies import text_hash

ASKED = "asked"
"""The field naming the interrupt that holds the record's request and context."""
REFERRED = ("request", "context")
"""The record's fields, whole or in pieces, its interrupt holds instead."""


def referred(name: str) -> bool:
    """Whether hash field `name` is a referred field or one of its pieces."""
    return name.partition("#")[0] in REFERRED


def refer(redis: Redis, record: ApiQuestionRecord, interrupt_id: str) -> None:
    """Leave `record`'s request and context to the interrupt `interrupt_id`, which holds the same.

    The interrupt's name is written before anything is deleted, and Redis runs the two in
    order: whatever happens between them, a read finds the fields or where they are.
    """
    key = keys.api_question(record.id)
    pipe = redis.pipeline(transaction=False)
    pipe.hset(key, ASKED, interrupt_id)
    pipe.hdel(key, *[name for name in record.to_hash() if referred(name)])
    pipe.execute()


def read(redis: Redis, question_ids: Iterable[str]) -> list[dict[str, str]]:
    """The hashes of the API's records of `question_ids`, in order (empty where there is none), each
    whole: a referred request and context read from its interrupt, in one more round trip."""
    ids = list(question_ids)
    pipe = redis.pipeline(transaction=False)
    for qid in ids:
        pipe.hgetall(keys.api_question(qid))
    found = [text_hash(data) for data in pipe.execute()]
    partial = [data for data in found if data.get(ASKED) and not any(referred(n) for n in data)]
    if partial:
        for data in partial:
            pipe.hgetall(keys.interrupt(data[ASKED]))
        for data, asked in zip(partial, pipe.execute(), strict=True):
            data.update({name: value for name, value in text_hash(asked).items() if referred(name)})
    return found
