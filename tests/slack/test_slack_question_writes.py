"""Where a posted question is recorded: by the park when nobody is told of it first, at once when someone is.

A question asked of the run's starter alone is followed by nothing but the park, which records
its message in the same step; a separate write before it would be a round trip for nothing. A
question put to someone else is recorded before that person's DM, which links to it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from inprocess_bot import CHANNEL, Bot, running_bot
from noting_redis import NotingRedis
from runtime_helpers import work
from slack_forms import posted_blocks

from bot.playground.workspace import TEAM_ID
from workers.receipts import Signer
from workers.receipts.canonical import blocks_digest
from workers.runtime.queues import enqueue_run
from workers.store import keys, scripts

pytestmark = pytest.mark.integration


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
    assert json.loads(write[3])["ts"] == paused.question["ts"]
    dm = bot.wait_call("chat.postMessage", lambda c: "is asking you a question" in str(c["args"].get("text")))
    assert dm is not None
    assert paused.interrupt.message["ts"] == paused.question["ts"]


def test_a_run_started_without_a_thread_reads_only_its_conversation_before_posting_the_root(
    bot: Bot, noted: NotingRedis
) -> None:
    """The worker looks again at the run's thread before starting one (another process may have);
    the conversation is all it needs, not the whole run."""
    run = bot.runtime.store.create(
        "s-form", "no thread yet", "U0BOB", {"host": "slack", "team": TEAM_ID, "channel": CHANNEL}
    )
    enqueue_run(bot.runtime.queue, run.id, run.job)
    noted.clear()
    work(bot.runtime)  # in this thread: what a background thread of the bot reads meanwhile is not the worker's
    sent = noted.sent_from(threading.current_thread().name)
    # From the claim on: the fault suite, when collected in this process, wraps the job with a read of its own.
    claim = hashlib.sha1(scripts.CLAIM.encode()).hexdigest()
    sent = sent[next(i for i, c in enumerate(sent) if c[:2] == ["EVALSHA", claim]) :]
    conversation = bot.runtime.store.get(run.id).conversation
    assert conversation["thread_ts"] and [m["ts"] for m in bot.roots() if m["ts"] == conversation["thread_ts"]]
    assert [c for c in sent if c[:3] == ["HMGET", keys.run(run.id), "conversation"]]  # whole or in pieces
    assert [c for c in sent if c[:2] == ["HGETALL", keys.run(run.id)]] == []


def test_without_a_receipt_key_a_posted_question_carries_no_digest_of_its_blocks(bot: Bot) -> None:
    """The digest is read only by a signed receipt: a worker without the key does not make it."""
    paused = bot.paused("s-form")
    assert paused.interrupt.message["ts"] == paused.question["ts"]
    assert "blocks_digest" not in paused.interrupt.message


def test_with_a_receipt_key_a_posted_question_carries_the_digest_of_the_blocks_slack_got(
    noted: NotingRedis, tmp_path: Path
) -> None:
    with running_bot(noted, tmp_path, receipt_key=Signer.generate().private_pem()) as signing:
        paused = signing.paused("s-form")
        shown = posted_blocks(signing.calls("chat.postMessage"), paused.interrupt.id)
        assert paused.interrupt.message["blocks_digest"] == blocks_digest(shown)
