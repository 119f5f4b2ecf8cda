"""How fast runs may be started from Slack: signed `/parley` commands through the real bolt app,
against the per-person and per-channel token buckets and the cap on a person's open runs."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, running_bot
from prometheus_client import REGISTRY
from slack_bolt import BoltResponse

from parley.settings import load
from workers.exceptions import ConfigError
from workers.runtime import admin
from workers.store.runs import RunStore
from workers.store.starts import RESERVE_GRACE, Rate, StartLimit, StartLimits

pytestmark = pytest.mark.integration

UNLIMITED = StartLimits(per_user=None, per_channel=None, open_runs=None)
BotWith = Callable[..., Bot]


def refusals(limit: StartLimit) -> float:
    return REGISTRY.get_sample_value("parley_run_starts_refused_total", {"limit": limit.value}) or 0.0


def ephemeral(resp: BoltResponse) -> str:
    assert resp.status == 200, resp.body
    body = json.loads(resp.body)
    assert body["response_type"] == "ephemeral"
    return str(body["text"])


@pytest.fixture
def bot_with(r: redis.Redis, tmp_path: Path) -> Iterator[BotWith]:
    """Build a bot with the given start limits (the default limits without any)."""
    bots: list[Any] = []

    def build(limits: StartLimits | None = None) -> Bot:
        cm = running_bot(r, tmp_path, start_limits=limits)
        bots.append(cm)
        return cm.__enter__()

    yield build
    for cm in reversed(bots):
        cm.__exit__(None, None, None)


def test_the_eleventh_start_in_a_minute_is_refused_by_default_and_starts_nothing(bot_with: BotWith) -> None:
    bot = bot_with()
    before = refusals(StartLimit.USER)
    for n in range(10):
        resp = bot.command(f"s-form job {n}")
        assert (resp.status, resp.body) == (200, ""), resp.body
    text = ephemeral(bot.command("s-form one too many"))
    assert "PARLEY_STARTS_PER_USER" in text and "10/min" in text and "nothing was started" in text
    assert re.search(r"Try again in [1-6] s\.", text), text
    bot.settle()
    assert len(bot.runs()) == 10 and not [r for r in bot.runs() if r.text == "one too many"]
    assert len(bot.roots()) == 10  # no root message for the refused start
    assert refusals(StartLimit.USER) == before + 1
    # Another person in the same channel is not held back by the first one's bucket.
    assert bot.command("s-form someone else", user="U0ALICE").body == ""


def test_a_channel_bucket_holds_every_starter_of_the_channel(bot_with: BotWith) -> None:
    bot = bot_with(StartLimits(per_user=Rate(1, 60.0), per_channel=Rate(2, 60.0), open_runs=None))
    before = refusals(StartLimit.CHANNEL)
    assert bot.command("s-form a", user="U0ALICE").body == ""
    # Bob's second start is refused by his own bucket, and takes nothing from the channel's.
    assert bot.command("s-form b", user="U0BOB").body == ""
    assert "PARLEY_STARTS_PER_USER" in ephemeral(bot.command("s-form b again", user="U0BOB"))
    text = ephemeral(bot.command("s-form c", user="U0CAROL"))
    assert "in this channel" in text and "PARLEY_STARTS_PER_CHANNEL" in text and "2/min" in text
    assert re.search(r"Try again in \d+ s\.", text), text
    assert refusals(StartLimit.CHANNEL) == before + 1
    # Another channel has its own bucket.
    assert bot.command("s-form d", user="U0CAROL", channel="C0OPS").body == ""
    assert sorted(r.text for r in bot.runs()) == ["a", "b", "d"]


def test_open_runs_are_capped_per_person_until_one_ends(bot_with: BotWith) -> None:
    bot = bot_with(StartLimits(per_user=None, per_channel=None, open_runs=2))
    before = refusals(StartLimit.OPEN_RUNS)
    assert bot.command("s-form one").body == "" and bot.command("s-form two").body == ""
    text = ephemeral(bot.command("s-form three"))
    assert "2 runs open" in text and "PARLEY_OPEN_RUNS_PER_USER" in text and "finished or been cancelled" in text
    assert refusals(StartLimit.OPEN_RUNS) == before + 1
    assert bot.command("s-form mine", user="U0ALICE").body == ""  # the cap is per person
    [one] = [r for r in bot.runs() if r.text == "one"]
    bot.settle()
    admin.cancel(bot.runtime, one.id, "U0BOB")
    assert bot.command("s-form three").body == ""
    assert sorted(r.text for r in bot.runs()) == ["mine", "one", "three", "two"]


def test_no_limit_when_every_limit_is_off(bot_with: BotWith) -> None:
    bot = bot_with(UNLIMITED)
    for n in range(15):
        assert bot.command(f"s-form {n}").body == ""
    assert len(bot.runs()) == 15


# ---- the store's script, on its own clock ---------------------------------------------------
def test_a_bucket_refills_evenly_over_its_period(r: redis.Redis) -> None:
    starts = RunStore(r).starts
    limits = StartLimits(per_user=Rate(2, 60.0), per_channel=None, open_runs=None)

    def admit(now: float, n: int) -> StartLimit | None:
        return starts.admit(limits, team="T1", channel="C1", user="U1", run_id=f"r{n}", now=now).refused

    assert admit(1000.0, 1) is None and admit(1000.0, 2) is None
    refused = starts.admit(limits, team="T1", channel="C1", user="U1", run_id="r3", now=1010.0)
    assert refused.refused is StartLimit.USER and refused.retry_after == pytest.approx(20.0)
    assert admit(1030.0, 4) is None  # one token back after 30 s
    assert admit(1030.0, 5) is StartLimit.USER
    assert starts.admit(limits, team="T2", channel="C1", user="U1", run_id="r6", now=1030.0).refused is None


def test_an_admitted_run_counts_as_open_before_its_record_exists(r: redis.Redis) -> None:
    """A start admitted but not yet created holds its place for a while, so two racing starts cannot
    both take the last one; a reservation whose run never appeared is let go."""
    starts = RunStore(r).starts
    limits = StartLimits(per_user=None, per_channel=None, open_runs=1)
    assert starts.admit(limits, team="T1", channel="C1", user="U1", run_id="r1", now=1000.0).refused is None
    again = starts.admit(limits, team="T1", channel="C1", user="U1", run_id="r2", now=1001.0)
    assert again.refused is StartLimit.OPEN_RUNS
    later = 1000.0 + RESERVE_GRACE + 1
    assert starts.admit(limits, team="T1", channel="C1", user="U1", run_id="r3", now=later).refused is None


def test_a_channel_over_its_limit_started_nothing_in_redis(bot_with: BotWith, r: redis.Redis) -> None:
    """A refusal writes nothing of the run: no record, no index entry, no queued job."""
    bot = bot_with(StartLimits(per_user=None, per_channel=Rate(1, 3600.0), open_runs=None))
    assert bot.command("s-form first").body == ""
    bot.settle()
    runs_before = r.zcard("parley:idx:runs")
    assert "Try again in 60 min." in ephemeral(bot.command("s-form second", channel=CHANNEL))
    assert r.zcard("parley:idx:runs") == runs_before == 1


# ---- the settings ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "rate"),
    [
        ("10/min", Rate(10, 60.0)),
        ("30/hour", Rate(30, 3600.0)),
        ("5/10s", Rate(5, 10.0)),
        (" 2 / day ", Rate(2, 86400.0)),
        ("off", None),
    ],
)
def test_start_limits_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch, raw: str, rate: Rate) -> None:
    monkeypatch.setenv("PARLEY_STARTS_PER_USER", raw)
    monkeypatch.setenv("PARLEY_OPEN_RUNS_PER_USER", "0")
    limits = load().start_limits
    assert (limits.per_user, limits.per_channel, limits.open_runs) == (rate, Rate(30, 60.0), None)


@pytest.mark.parametrize("raw", ["10", "ten/min", "0/min", "10/fortnight", "10/0s"])
def test_a_malformed_start_rate_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("PARLEY_STARTS_PER_CHANNEL", raw)
    with pytest.raises(ConfigError) as info:
        load()
    assert str(info.value).startswith("PARLEY_STARTS_PER_CHANNEL: ") and "such as 10/min" in str(info.value)
