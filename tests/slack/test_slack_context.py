"""Approvals bound to what was approved, end to end through Slack's wire formats.

The `s-bound` agent (tests/slack_agents.py) reads its facts from a file on every replay and
asks to approve them. Changing the file between the question and the approval voids the
approval: the resumed run asks again, showing what changed, marks the old question
superseded and never acts on the stale answer. With the file unchanged it acts at once.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from effect_counters import count
from slack_forms import blocks_of, is_question, texts
from slack_stack import RunRef, SlackStack

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1)]

FACTS = {"service": "api", "version": "v1.4.2", "target": "production"}


def facts_file(stack: SlackStack, name: str, facts: dict[str, str]) -> Path:
    path = stack.data_dir / "facts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(facts))
    return path


def start(stack: SlackStack, facts: dict[str, str]) -> tuple[RunRef, Path]:
    name = secrets.token_hex(4)
    path = facts_file(stack, name, facts)
    return stack.start_run("s-bound", json.dumps({"facts": name}) + f" bound-{name}"), path


def approve(stack: SlackStack, run: RunRef, question: dict[str, Any]) -> None:
    resp, _ = stack.submit(run, question, {"Decision": "Approve"})
    assert resp.status_code == 200 and resp.text == ""


def final(stack: SlackStack, run: RunRef) -> str:
    reply = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), f"run {run.run_id} to finish")
    return str(reply["text"])


def test_an_approval_given_on_facts_that_changed_is_asked_again_and_never_acted_on(stack: SlackStack) -> None:
    run, path = start(stack, FACTS)
    first = stack.question(run, 1)
    shown = texts(first["blocks"])
    assert "*You are deciding on*\n• service: api\n• version: v1.4.2\n• target: production" in shown

    path.write_text(json.dumps({**FACTS, "version": "v1.4.3"}))  # a newer release lands meanwhile
    mark = stack.mark()
    approve(stack, run, first)

    second = stack.question(run, 2)
    assert second["ts"] != first["ts"]
    posted = stack.wait_call("chat.postMessage", lambda c: is_question({"blocks": blocks_of(c)}), since=mark)
    asked_again = texts(blocks_of(posted))
    assert ":warning: *The facts changed since the last answer*, so it no longer applies:\n" in asked_again
    assert "• version: v1.4.2 → v1.4.3" in asked_again
    assert "• version: v1.4.3" in asked_again and "service: api" in asked_again
    superseded = stack.wait_call(
        "chat.update",
        lambda c: c["args"].get("ts") == first["ts"] and "Superseded: the facts changed" in texts(blocks_of(c)),
        since=mark,
        what="the first question to be marked superseded",
    )
    assert "• version: v1.4.2 → v1.4.3" in texts(blocks_of(superseded))
    old = texts(stack.message(run, first["ts"])["blocks"])
    assert "Superseded: the facts changed" in old and "The answer by <@U0BOB> no longer applies" in old
    assert stack.status(run.run_id) == "paused"
    assert count(stack.data_dir, run.run_id, "act") == 0  # the stale approval was never acted on

    approve(stack, run, second)
    assert final(stack, run) == ":white_check_mark: Done: deployed api v1.4.3 after the facts changed"
    assert count(stack.data_dir, run.run_id, "act") == 1
    questions = stack.calls(
        "chat.postMessage",
        lambda c: c["args"].get("thread_ts") == run.root_ts and is_question({"blocks": blocks_of(c)}),
    )
    assert len(questions) == 2


def test_an_approval_on_unchanged_facts_goes_through_at_once(stack: SlackStack) -> None:
    run, _ = start(stack, FACTS)
    question = stack.question(run, 1)
    assert "• version: v1.4.2" in texts(question["blocks"])
    mark = stack.mark()
    approve(stack, run, question)
    assert final(stack, run) == ":white_check_mark: Done: deployed api v1.4.2"
    assert count(stack.data_dir, run.run_id, "act") == 1
    assert stack.calls("chat.postMessage", lambda c: is_question({"blocks": blocks_of(c)}), since=mark) == []
    locked = texts(stack.message(run, question["ts"])["blocks"])
    assert "Answered by <@U0BOB>" in locked and "• version: v1.4.2" in locked
    assert "Superseded" not in locked
