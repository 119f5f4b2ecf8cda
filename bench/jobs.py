"""Raw RQ job functions the baselines run: as little as a job can do, and a bare Web API post."""

from __future__ import annotations

import os
import time
from functools import cache
from typing import Any

import redis
from slack_sdk import WebClient

from bot.slack.client import make_web_client

DONE_KEY = "bench:raw:done"


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"])


@cache
def _web() -> WebClient:
    return make_web_client(os.environ["SLACK_BOT_TOKEN"], os.environ["SLACK_API_URL"])


def mark(key: str) -> None:
    """Push the time this job started to `key` (enqueue-to-start and resume baselines)."""
    _redis().rpush(key, repr(time.time()))


def noop() -> None:
    """A trivial job; counts itself so throughput can be timed without polling registries."""
    _redis().incr(DONE_KEY)


def post_question(channel: str, thread_ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
    """Post prebuilt question blocks in a thread: the least a question can cost to reach Slack."""
    _redis().set(f"bench:posted:{thread_ts}", repr(time.time()))
    _web().chat_postMessage(
        channel=channel, thread_ts=thread_ts, text=text, blocks=blocks, unfurl_links=False, unfurl_media=False
    )
