"""The agents the bench runs in real `parley worker` processes (`PARLEY_AGENTS=bench.agents`).

`bench-cycle` asks one 3-item question, and when it runs again after the answer it
pushes the time to `bench:resumed:<run id>` before going on, so the bench can time
Submit POST → agent code running again. Its first execution also records when it
was about to ask (`bench:asked:<run id>`), for the question latency. With text
`say` it posts one progress line before its final answer (the worker-class job mix).
"""

from __future__ import annotations

import os
import time
from functools import cache
from typing import Any

import redis

from workers import agent
from workers.interaction import Item, ItemType, Option, Request
from workers.runtime.run import execution_of

AGENT = "bench-cycle"


def three_item_request() -> Request:
    """A typical question: one choice, a few tags, a line of text."""
    return Request(
        reason="Deploy api v1.4.2 to which environment, in which regions, and why now?",
        items=[
            Item(
                id="env",
                text="Environment",
                type=ItemType.SELECT,
                options=[
                    Option(value="staging", label="Staging"),
                    Option(value="production", label="Production"),
                    Option(value="canary", label="Canary"),
                ],
            ),
            Item(
                id="regions",
                text="Regions",
                type=ItemType.MULTI_SELECT,
                options=["us-east-1", "eu-west-1", "ap-south-1", "sa-east-1"],
            ),
            Item(
                id="why",
                text="Reason",
                type=ItemType.FREE_TEXT,
                required=False,
                placeholder="One line for the deploy log",
            ),
        ],
    )


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(os.environ["REDIS_URL"])


@agent(AGENT, description="Bench agent: asks one 3-item question, then finishes")
def bench_cycle(run: Any, text: str) -> str:
    if execution_of(run).epoch == 1:
        _redis().set(f"bench:asked:{run.run_id}", repr(time.time()))
    answers = run.ask(three_item_request())
    _redis().rpush(f"bench:resumed:{run.run_id}", repr(time.time()))
    if "say" in text:
        run.say(f"Deploying to {answers['env']}")
    return f"deployed to {answers['env']} in {', '.join(answers['regions'] or [])}"


GROUP_SIZE = 10
ALL_AGENT = "bench-all"
SEQ_AGENT = "bench-seq"


def group_requests() -> dict[str, Request]:
    """Ten 3-item questions, each to its own person."""
    base = three_item_request()
    return {f"q{k}": base.model_copy(update={"assignees": [f"U0B{k:03d}"]}) for k in range(GROUP_SIZE)}


@agent(ALL_AGENT, description="Bench agent: asks ten questions at once with ask_all, then finishes")
def bench_all(run: Any, text: str) -> str:
    _redis().setnx(f"bench:asked:{run.run_id}", repr(time.time()))
    got = run.ask_all(group_requests())
    _redis().setnx(f"bench:resumed:{run.run_id}", repr(time.time()))
    return f"{len(got)} answered"


@agent(SEQ_AGENT, description="Bench agent: asks the same ten questions one after another, then finishes")
def bench_seq(run: Any, text: str) -> str:
    for key, request in group_requests().items():
        _redis().setnx(f"bench:asked:{run.run_id}:{key}", repr(time.time()))
        run.ask(request, key=key)
        _redis().setnx(f"bench:resumed:{run.run_id}:{key}", repr(time.time()))
    return f"{GROUP_SIZE} answered"
