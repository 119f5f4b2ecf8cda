"""Where a posted question is recorded: by the park when nobody is told of it first, at once when someone is.

A question asked of the run's starter alone is followed by nothing but the park, which records
its message in the same step; a separate write before it would be a round trip for nothing. A
question put to someone else is recorded before that person's DM, which links to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import Bot, running_bot
from noting_redis import NotingRedis

from workers.store import keys

pytestmark = pytest.mark.integration


@pytest.fixture
def noted(r: redis.Redis) -> NotingRedis:
    return NotingRedis(connection_pool=r.connection_pool)


@pytest.fixture
def bot(noted: NotingRedis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(noted, tmp_path) as b:
        yield b


def _message_writes(noted: NotingRedis, iid: str) -> list[list[str]]:
    return [c for c in noted.sent if c[:2] == ["HSET", keys.interrupt(iid)] and "message" in c[2::2]]


def test_a_question_for_its_starter_alone_is_recorded_by_the_park(bot: Bot, noted: NotingRedis) -> None:
    paused = bot.paused("s-form")
    assert _message_writes(noted, paused.interrupt.id) == []
    assert paused.interrupt.message["ts"] == paused.question["ts"]  # the park recorded it
    assert paused.interrupt.message["channel"] == paused.channel


def test_a_question_someone_is_told_of_is_recorded_at_once(bot: Bot, noted: NotingRedis) -> None:
    paused = bot.paused("s-form", {"assignees": ["U0CAROL"]})
    [write] = _message_writes(noted, paused.interrupt.id)
    assert f'"ts": "{paused.question["ts"]}"' in write[3]
    dm = bot.wait_call("chat.postMessage", lambda c: "is asking you a question" in str(c["args"].get("text")))
    assert dm is not None
    assert paused.interrupt.message["ts"] == paused.question["ts"]
