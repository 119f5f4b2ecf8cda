"""Slack's stop button and the admins' Cancel queue the very same cancel-effects job.

Only a run Slack started in a thread has an agent session (`SlackHost.start_thread`), and
such a run has no webhook or Temporal target: those belong to questions asked through the
API, whose host posts the question itself and starts no session. So Slack never shows a
stop button on a run with a webhook or workflow. What a stop does is still provably what
Cancel does: both queue `cancelled-<run>` on the runs' queue, the job whose worker locks
the questions and, for an API question, tells its webhook or Temporal workflow.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import CHANNEL, Bot, PausedRun, running_bot
from rq.job import Job
from rq.serializers import JSONSerializer
from slack_forms import button_action, find_element
from slack_payloads import ADMIN, app_home_opened_event, home_actions_payload

from workers.runtime.queues import CANCELLED
from workers.store import job_ids
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def stopped_event(user: str, thread_ts: str) -> dict[str, Any]:
    """The event as Slack's reference shows it (docs.slack.dev/reference/events/agent_session_stopped)."""
    return {
        "type": "agent_session_stopped",
        "channel": CHANNEL,
        "thread_ts": thread_ts,
        "user": user,
        "streaming_message_ts": [],
        "event_ts": f"{time.time():.6f}",
    }


def _cancel_job(bot: Bot, paused: PausedRun) -> tuple[str, list[object], str]:
    """The queued cancel-effects job of `paused`'s run: its function, its arguments and its queue."""
    run_id = paused.run.id
    bot.wait_for("the run to be cancelled", lambda: bot.runtime.store.get(run_id).status is RunStatus.CANCELLED)
    job_id = job_ids.cancelled(run_id)
    bot.wait_for("its cancel-effects job", lambda: job_id in bot.runtime.queue.get_job_ids())
    job = Job.fetch(job_id, connection=bot.runtime.redis, serializer=JSONSerializer)
    return job.func_name, list(job.args), job.origin


def test_a_stop_queues_the_job_the_admins_cancel_queues(bot: Bot) -> None:
    stopped = bot.paused("s-pick")
    assert bot.event(stopped_event(ADMIN, stopped.root_ts)).status == 200
    by_stop = _cancel_job(bot, stopped)

    cancelled = bot.paused("s-pick")
    assert bot.event(app_home_opened_event(ADMIN)).status == 200
    bot.wait_call("views.publish", lambda c: c["args"].get("user_id") == ADMIN)
    home = bot.ws.home(ADMIN)
    assert home is not None
    block = next(b for b in home["blocks"] if b.get("block_id") == f"hra|{cancelled.run.id}")
    _, cancel = find_element([block], "parley_admin_cancel")
    assert bot.interact(home_actions_payload(user=ADMIN, view=home, action=button_action(block, cancel))).status == 200
    by_cancel = _cancel_job(bot, cancelled)

    assert by_stop == (CANCELLED, [stopped.run.id], bot.runtime.queue.name)
    assert by_cancel == (CANCELLED, [cancelled.run.id], bot.runtime.queue.name)
