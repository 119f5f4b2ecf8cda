"""The message a question becomes once it closes: answered, cancelled or expired.

Its top-level `text` (what notifications and screen readers show) stays within the 4,000
characters Slack recommends, however much escaping lengthens the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import Bot, running_bot
from runtime_helpers import work
from slack_payloads import ADMIN

from workers.runtime import admin

pytestmark = pytest.mark.integration

HEAVY_REASON = "<&> " * 400
"""1,600 characters (the slash command's text holds at most 3,000) that escape to 5,600."""


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def test_an_answered_questions_text_stays_within_4000_characters(bot: Bot) -> None:
    paused = bot.paused("s-form", {"reason": HEAVY_REASON})
    assert bot.click(paused, "parley_submit", user="U0BOB", fills={"Colour": "Red"}).status == 200
    work(bot.runtime)
    locked = bot.wait_call("chat.update", lambda c: c["args"].get("ts") == paused.question["ts"])
    text = locked["args"]["text"]
    assert text.startswith("Answered by <@U0BOB>: &lt;&amp;&gt; &lt;&amp;&gt;")
    assert len(text) <= 4000 and text.endswith("…")


def test_a_cancelled_questions_text_stays_within_4000_characters(bot: Bot) -> None:
    paused = bot.paused("s-form", {"reason": HEAVY_REASON})
    admin.cancel(bot.runtime, paused.run.id, by=ADMIN)
    work(bot.runtime)  # a worker locks the question
    locked = bot.wait_call("chat.update", lambda c: c["args"].get("ts") == paused.question["ts"])
    text = locked["args"]["text"]
    assert text.startswith("Cancelled: &lt;&amp;&gt;") and len(text) <= 4000
