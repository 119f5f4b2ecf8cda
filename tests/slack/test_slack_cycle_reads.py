"""What a run's cycle in Slack reads back from Redis: nothing its worker already holds.

The execution that resumed a run hands the host its record, so an answered question does not
read the run to learn it is running; a final answer reads the run's history (who answered)
only when it mentions someone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from inprocess_bot import Bot, PausedRun, running_bot
from noting_redis import NotingRedis
from runtime_helpers import work
from slack_forms import button_action, find_element
from slack_payloads import block_actions_payload

from workers.runtime import jobs
from workers.runtime.execute import execute as run_execution
from workers.runtime.wiring import Runtime
from workers.store import keys
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(noted: NotingRedis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(noted, tmp_path) as running:
        yield running


def _resumed(bot: Bot, noted: NotingRedis, monkeypatch: pytest.MonkeyPatch) -> tuple[PausedRun, list[list[str]]]:
    """An s-pick run answered and worked to its end, with the commands its execution sent.

    Only the run's execution is counted: the burst worker's own upkeep around it (RQ's registry
    cleaning, which may run on the same thread) is RQ's, not the host's.
    """
    paused = bot.paused("s-pick")
    block, button = find_element(paused.question["blocks"], lambda a: a.startswith("parley_choose_"))
    payload = block_actions_payload(
        user="U0BOB", message=paused.question, channel=paused.channel, action=button_action(block, button)
    )
    assert bot.interact(payload).status == 200
    bot.settle()  # the click's work after its ack is not the resume's
    noted.clear()

    def execute(runtime: Runtime, run_id: str) -> str:
        with noted.during("execute"):  # this thread only: the lease keeper's thread is not counted
            return run_execution(runtime, run_id)

    monkeypatch.setattr(jobs, "execute", execute)
    work(bot.runtime)
    sent = noted.sent_during("execute")
    assert sent, "the run's execution sent nothing: it did not run through the patched entry"
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.SUCCEEDED
    return paused, sent


def test_the_resumed_run_shows_processing_without_reading_itself_again(
    bot: Bot, noted: NotingRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused, sent = _resumed(bot, noted, monkeypatch)
    session = bot.ws.agents.sessions[(paused.channel, paused.root_ts)]
    assert session.statuses == ["processing", "suspended", "processing", "closed"]
    assert [c for c in sent if c[:2] == ["HGETALL", keys.run(paused.run.id)]] == []


def test_a_final_answer_that_mentions_nobody_reads_no_history(
    bot: Bot, noted: NotingRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused, sent = _resumed(bot, noted, monkeypatch)
    [final] = [m for m in bot.ws.thread(paused.channel, paused.root_ts) if m["text"].startswith(":white_check_mark:")]
    assert "<@" not in final["text"]
    assert [c for c in sent if c[:2] == ["LRANGE", keys.history(paused.run.id)]] == []


def test_a_run_without_a_plan_reads_no_plan_on_any_thread(bot: Bot, noted: NotingRedis) -> None:
    """The thread's mark says the run has no plan: neither its question, its answer nor its end reads one."""
    noted.clear()
    paused = bot.paused("s-pick")
    block, button = find_element(paused.question["blocks"], lambda a: a.startswith("parley_choose_"))
    payload = block_actions_payload(
        user="U0BOB", message=paused.question, channel=paused.channel, action=button_action(block, button)
    )
    assert bot.interact(payload).status == 200
    bot.settle()
    work(bot.runtime)
    assert bot.runtime.store.get(paused.run.id).status is RunStatus.SUCCEEDED
    assert bot.runtime.store.get(paused.run.id).conversation["plan"] is False
    assert [c for c in noted.sent if c[:2] == ["GET", keys.plan(paused.run.id)]] == []
