"""A question Slack cannot show fails its run at once, naming what is wrong, and nothing half-built is posted.

An agent's request is built from JSON in the run's text, asked through the real Slack host, and
posted (or not) to the Web API stand-in. Text that shows nothing is refused when the request is
built; a default the picker cannot show is refused when its blocks are built. Either way the
thread holds the run's root and its failure, and no question.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, running_bot
from runtime_helpers import work

from workers import agent
from workers.interaction import Request
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


@agent("limits-ask", description="Asks the request given as JSON in its text")
def ask_as_given(run: Any, text: str) -> str:
    request, _ = json.JSONDecoder().raw_decode(text.strip())
    return json.dumps(run.ask(Request.model_validate(request)))


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def _select(**item: Any) -> dict[str, Any]:
    return {"id": "env", "text": "Environment", "type": "select", "options": ["staging", "production"], **item}


CASES = {
    "blank reason": ({"reason": " \u200b", "items": [_select()]}, ["reason", "shows nothing"]),
    "blank option": ({"reason": "Deploy", "items": [_select(options=["staging", "  "])]}, ["options.1.label"]),
    "blank label": ({"reason": "Deploy", "items": [_select(text="\n\n")]}, ["items.0.text", "shows nothing"]),
    "datetime before 1970": (
        {
            "reason": "When?",
            "items": [{"id": "start", "text": "Start", "type": "datetime", "default": "1960-01-01T00:00:00Z"}],
        },
        ["cannot be shown in Slack", "item 'start'", "1960-01-01T00:00:00Z"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_question_slack_cannot_show_fails_the_run_before_anything_is_posted(bot: Bot, case: str) -> None:
    request, named = CASES[case]
    run, root_ts = bot.started("limits-ask", f"{json.dumps(request)} {secrets.token_hex(3)}")
    work(bot.runtime)

    failed = bot.runtime.store.get(run.id)
    assert failed.status is RunStatus.FAILED, failed
    assert all(part in failed.error for part in named), failed.error
    thread = bot.ws.thread(CHANNEL, root_ts)
    assert len(thread) == 2 and thread[1]["text"].startswith(":x: Failed"), thread  # the failure, and no question
    assert all(part in thread[1]["text"] for part in named[-1:]), thread[1]
    posts = bot.calls("chat.postMessage", lambda c: c["args"].get("thread_ts") == root_ts)
    assert [c["args"]["text"][:10] for c in posts] == [":x: Failed"]  # nothing else was even tried
    assert not bot.runtime.queue.job_ids  # not retried
