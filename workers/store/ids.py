"""Run, question and group ids: minted here, and their kind read here.

An id is unguessable and carries no authority, as the server checks every action. Its first
letter says what it names. So a run parked on `run.interrupt` is known to wait on one question
or a group without a read. Groups come from `ask_all`, `ask_any` and `ask_each`.
"""

from __future__ import annotations

import secrets

RUN = "r"
QUESTION = "q"
GROUP = "g"


def new_id(prefix: str) -> str:
    """An unguessable id beginning with `prefix` (runs and API questions: `RUN`)."""
    return f"{prefix}{secrets.token_urlsafe(12)}"


def new_question_id() -> str:
    """The id of one question (an interrupt)."""
    return f"{QUESTION}{secrets.token_urlsafe(16)}"


def new_group_id() -> str:
    """The id of a group of questions asked at once."""
    return f"{GROUP}{secrets.token_urlsafe(16)}"


def is_group(some_id: str) -> bool:
    """True when `some_id` names a group of questions.

    It may be a run's `interrupt` or an ask key's attempt.
    """
    return some_id.startswith(GROUP)


def is_question(some_id: str) -> bool:
    """True when `some_id` names a single question."""
    return some_id.startswith(QUESTION)
