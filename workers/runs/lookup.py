"""Finding the question a click or a form answers, by the id its controls carry.

A question's controls carry its interrupt id. An `ask_each` question has one message, whose
controls carry its group's id instead. The clicker's own question is the group member asked of
them. So nobody answers for another. A person who was not asked is refused and told who was.
"""

from __future__ import annotations

from workers.runtime.acceptance import AnswerOutcome
from workers.store.records import InterruptRecord, RefusalReason
from workers.store.refusal import Refusal
from workers.store.runs import RunStore


def lookup(store: RunStore, qid: str, user: str) -> InterruptRecord | AnswerOutcome:
    """The question `qid`, or the refusal saying why there is none.

    With an `ask_each` group `qid`, it is `user`'s own question in the group.
    """
    interrupt = store.interrupt(qid) if qid else None
    if interrupt is not None:
        return interrupt
    group = store.groups.group(qid) if qid else None
    if group is None:
        return AnswerOutcome.refused(qid, user, Refusal(RefusalReason.UNKNOWN))
    mine = store.groups.member_for(qid, user)
    if mine is None:
        return AnswerOutcome.refused(qid, user, Refusal(RefusalReason.NOT_ALLOWED, assignees=tuple(group.people)))
    return mine
