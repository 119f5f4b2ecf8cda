"""Drafts of a half-answered question in the terminal, on the test Redis.

Quitting mid-question (Ctrl-C) keeps the items already answered, per question, expiring
with it and never holding a secret; asking the question again pre-fills them, and an
accepted answer drops the draft.
"""

from __future__ import annotations

import json
import time

import pytest
import redis

from bot.terminal import TerminalHost
from workers.interaction import Answer, AnswerValue, Item, ItemType, Request
from workers.store import keys
from workers.store.drafts import DRAFT_TTL, Drafts

pytestmark = pytest.mark.integration

REQUEST = Request(
    reason="Deploy v1.4.2?",
    items=[
        Item(id="target", text="Target", type=ItemType.SELECT, options=["staging", "production"]),
        Item(id="token", text="Deploy token", type=ItemType.SECRET),
        Item(id="areas", text="Areas", type=ItemType.MULTI_SELECT, options=["api", "web"]),
        Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False),
        Item(id="when", text="When", type=ItemType.DATE),
    ],
)


class Person:
    """Answers from `values` in order, quitting (Ctrl-C) at `quit_at`; records each item's pre-filled default."""

    def __init__(self, values: dict[str, AnswerValue], quit_at: str = "") -> None:
        self.values, self.quit_at = values, quit_at
        self.defaults: dict[str, AnswerValue] = {}

    def ask(self, item: Item) -> AnswerValue:
        self.defaults[item.id] = item.default
        if item.id == self.quit_at:
            raise KeyboardInterrupt
        return self.values[item.id]

    def problem(self, item: Item, message: str) -> None:
        raise AssertionError(f"{item.id}: {message}")


def take(answers: list[Answer]) -> list[Answer]:
    """A check that takes every answer as given."""
    return answers


def test_quitting_keeps_what_was_answered_and_asking_again_prefills_it(r: redis.Redis) -> None:
    expires_at = time.time() + 600
    given = {"target": "production", "token": "tok-s3cr3t", "areas": ["api", "web"], "note": "canary first"}
    first = TerminalHost(Person(given, quit_at="when"), Drafts(r))
    with pytest.raises(KeyboardInterrupt):
        first.collect(REQUEST, take, draft=("q-1", expires_at))

    raw = r.get(keys.draft("q-1"))
    assert raw is not None and b"tok-s3cr3t" not in raw  # a secret is never kept
    assert json.loads(raw) == {"target": "production", "areas": ["api", "web"], "note": "canary first"}
    assert 590 <= r.ttl(keys.draft("q-1")) <= 600  # it expires with the question

    person = Person({**given, "when": "2026-12-24"})
    again = TerminalHost(person, Drafts(r))
    answers = again.collect(REQUEST, take, draft=("q-1", expires_at))
    assert person.defaults == {"target": "production", "token": None, "areas": ["api", "web"],
                               "note": "canary first", "when": None}  # fmt: skip
    assert {a.id for a in answers} == {"target", "token", "areas", "note", "when"}
    assert not r.exists(keys.draft("q-1"))  # answered: the draft is gone


def test_a_draft_without_expiry_lasts_a_week_and_one_per_question(r: redis.Redis) -> None:
    host = TerminalHost(Person({"target": "staging"}, quit_at="token"), Drafts(r))
    with pytest.raises(KeyboardInterrupt):
        host.collect(REQUEST, take, draft=("q-2", None))
    assert DRAFT_TTL - 10 <= r.ttl(keys.draft("q-2")) <= DRAFT_TTL
    assert Drafts(r).read("q-3") == {}  # another question has none

    nothing = TerminalHost(Person({}, quit_at="target"), Drafts(r))
    with pytest.raises(KeyboardInterrupt):
        nothing.collect(REQUEST, take, draft=("q-4", None))
    assert not r.exists(keys.draft("q-4"))  # nothing answered, nothing kept
