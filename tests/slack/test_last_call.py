"""The last call in Slack: shortly before a question expires, its thread says when, in the reader's time.

Real Redis, the bolt app, the Web API stand-in (its members' profiles carry a time zone),
and the sweep run at chosen times. Slack renders the `<!date^…>` token in each reader's
own zone; the fallback after `|` is in the zone of the person asked.
"""

from __future__ import annotations

import datetime as dt
import re
import time
import zoneinfo
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from inprocess_bot import Bot, running_bot

from bot.playground.directory import User
from workers.interaction import Item, ItemType, Request
from workers.questions import Caller, QuestionService
from workers.questions.models import QuestionCreate
from workers.runtime.sweep import sweep

pytestmark = pytest.mark.integration

MCP = Caller("mcp")
LA = "America/Los_Angeles"


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as b:
        b.ws.add_user(User("U0DANA", "dana", "Dana", tz=LA))
        b.ws.add_user(User("U0ERIK", "erik", "Erik", tz="Europe/Stockholm"))
        yield b


def ask(bot: Bot, assignees: list[str], expires_in: int = 7200) -> tuple[str, str, float]:
    """Post a question to `assignees`: its run id, message ts and expiry."""
    item = Item(id="d", text="Decision", type=ItemType.SELECT, options=["approve", "reject"])
    request = Request(reason="Ship it?", items=[item], assignees=assignees, expires_in=expires_in)
    view, _ = QuestionService(bot.runtime).create(MCP, QuestionCreate(request=request, channel="C0GENERAL"))
    interrupt = bot.runtime.store.interrupt(bot.runtime.store.get(view.id).interrupt)
    assert interrupt is not None and interrupt.expires_at is not None
    return view.id, str(view.message_ts), interrupt.expires_at


def thread_texts(bot: Bot, ts: str) -> list[str]:
    return [m["text"] for m in bot.ws.thread("C0GENERAL", ts)[1:]]


def test_the_last_call_says_when_in_the_askeds_own_time_zone(bot: Bot) -> None:
    run_id, ts, expires_at = ask(bot, ["U0DANA"])
    iid = bot.runtime.store.get(run_id).interrupt
    asked = expires_at - 7200

    assert sweep(bot.runtime, now=asked + 3601).reminded == [iid]
    [half] = thread_texts(bot, ts)
    assert half.startswith(":bell: Reminder: <@U0DANA>")

    assert sweep(bot.runtime, now=asked + 6301).reminded == [iid]
    last = thread_texts(bot, ts)[-1]
    local = dt.datetime.fromtimestamp(int(expires_at), zoneinfo.ZoneInfo(LA))
    assert local.strftime("%Z") in ("PST", "PDT")
    token = f"<!date^{int(expires_at)}^{{date_short_pretty}} at {{time}}|{local:%Y-%m-%d %H:%M %Z}>"
    assert last == f":alarm_clock: Last call: <@U0DANA>, the question above expires {token} (in 15 min)."
    assert [h.detail.get("last_call") for h in bot.runtime.store.history(run_id) if h.event == "reminded"] == [
        None,
        True,
    ]


def test_people_in_different_zones_read_the_token_and_a_utc_fallback(bot: Bot) -> None:
    _, ts, expires_at = ask(bot, ["U0DANA", "U0ERIK"])
    asked = expires_at - 7200
    sweep(bot.runtime, now=asked + 3601)
    sweep(bot.runtime, now=asked + 6301)
    last = thread_texts(bot, ts)[-1]
    assert last.startswith(":alarm_clock: Last call: <@U0DANA>, <@U0ERIK>, the question above expires <!date^")
    fallback = re.search(r"\|([^>]*)>", last)
    assert fallback is not None and fallback.group(1).endswith(" UTC")


def test_a_question_of_an_hour_has_no_last_call(bot: Bot) -> None:
    _, ts, expires_at = ask(bot, ["U0DANA"], expires_in=3600)
    asked = expires_at - 3600
    assert sweep(bot.runtime, now=asked + 1801).reminded
    assert sweep(bot.runtime, now=time.time() + 3599).reminded == []
    assert [t for t in thread_texts(bot, ts) if "Last call" in t] == []
