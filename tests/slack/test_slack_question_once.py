"""Each question is posted once, even when the worker never learns that Slack posted it.

The worker records the question before posting it and the message's `ts` right after. Here
Slack posts the question and then the reply never reaches the worker (the Web API holds it
past the client's timeout, as when a process dies inside `chat.postMessage`): the run is
retried, and its replay finds the question in the thread by the message metadata it was
posted with (`conversations.replies` with `include_all_metadata`) instead of posting another.
The blocks Slack returns with that message are what was shown: the receipt's `shown_digest`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, PausedRun, answers_of, running_bot
from runtime_helpers import work
from slack_forms import is_question

from workers.receipts import KeyRing, Signer
from workers.receipts.canonical import blocks_digest
from workers.receipts.verify import verify_envelope
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration

CLIENT_TIMEOUT = 1
"""Seconds the worker's Web API client waits for a reply; the stand-in holds it longer."""


SIGNER = Signer.generate()


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, client_timeout=CLIENT_TIMEOUT, receipt_key=SIGNER.private_pem()) as running:
        yield running


def replies(bot: Bot, root_ts: str) -> list[dict]:
    """What the bot posted in the run's thread, below its root message."""
    return bot.ws.thread(CHANNEL, root_ts)[1:]


def test_a_question_posted_but_not_recorded_is_found_not_posted_again(bot: Bot) -> None:
    run, root_ts = bot.started("s-form", secrets.token_hex(4))
    bot.ws.faults.hold_next("chat.postMessage", CLIENT_TIMEOUT + 2)
    work(bot.runtime)  # the first execution gives up on the post; its retry replays the run

    [question] = replies(bot, root_ts)
    assert is_question(question)
    assert question["metadata"] == {
        "event_type": "parley_question",
        "event_payload": {"interrupt_id": bot.runtime.store.get(run.id).interrupt},
    }
    [lookup] = bot.calls("conversations.replies")
    assert (lookup["args"]["channel"], lookup["args"]["ts"]) == (CHANNEL, root_ts)
    assert lookup["args"]["include_all_metadata"] in (True, "true", "1")

    paused = bot.runtime.store.get(run.id)
    assert paused.status is RunStatus.PAUSED
    assert [e.event for e in bot.runtime.store.history(run.id)].count("retry") == 1
    interrupt = bot.runtime.store.interrupt(paused.interrupt)
    assert interrupt is not None and interrupt.state is InterruptState.OPEN
    assert interrupt.message["ts"] == question["ts"]

    # The one question answers, and the run carries on from it.
    asked = PausedRun(paused, root_ts, question, interrupt)
    assert bot.click(asked, "parley_submit", user="U0BOB", fills={"Colour": "Green"}).status == 200
    assert answers_of(bot.runtime.store.interrupt(interrupt.id)) == {"colour": "Green"}
    work(bot.runtime)
    assert bot.runtime.store.get(run.id).status is RunStatus.SUCCEEDED
    locked, final = replies(bot, root_ts)
    assert locked["ts"] == question["ts"] and not is_question(locked)
    assert final["text"] == ":white_check_mark: Done: colour Green, note -"
    receipt = bot.runtime.receipts.get(interrupt.id)
    assert receipt is not None
    shown = verify_envelope(receipt.envelope, KeyRing([SIGNER.public]), receipt.digest).predicate["question"]
    assert shown["shown_digest"] == {"sha256": blocks_digest(question["blocks"])}  # the blocks Slack holds
