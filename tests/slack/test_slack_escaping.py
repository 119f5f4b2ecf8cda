"""Agent text never becomes Slack markup, and nothing Parley sends breaks Slack's Block Kit limits.

The `s-escape` agent (tests/slack_agents.py) puts `<!channel>`, `<@U123>`, `&` and a disguised link
into its reason, item labels, options, progress notes and result, some of it 3,000 characters
long. Every message and view the stand-in received must show that text escaped wherever Slack
parses mrkdwn (plain_text fields are shown literally and may carry it raw), and every one must
pass the stand-in's `invalid_blocks` check.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from slack_agents import NASTY
from slack_payloads import ADMIN, app_home_opened_event, mrkdwn_escape
from slack_stack import SlackStack

from bot.playground import validate_blocks

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1)]

RAW = ("<!channel>", "<@U123>", "<https://evil.example|click>", "Tom & Jerry")
ESCAPED = mrkdwn_escape(NASTY)
SURFACES = ("chat.postMessage", "chat.update", "chat.postEphemeral", "views.publish", "views.open")


def mrkdwn_texts(node: Any) -> list[str]:
    """Every string in `node` that Slack parses as mrkdwn: the text of each `mrkdwn` object."""
    found: list[str] = []
    if isinstance(node, dict):
        if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
            found.append(node["text"])
        for value in node.values():
            found += mrkdwn_texts(value)
    elif isinstance(node, list):
        for value in node:
            found += mrkdwn_texts(value)
    return found


def parsed_texts(call: dict[str, Any]) -> list[str]:
    """What Slack parses in one Web API call: the message's top-level `text` and its mrkdwn objects."""
    args = call["args"]
    texts = [args["text"]] if isinstance(args.get("text"), str) else []
    return texts + mrkdwn_texts(args.get("blocks")) + mrkdwn_texts(args.get("view"))


def assert_slack_accepts(call: dict[str, Any]) -> None:
    assert call["status"] == 200 and call["error"] is None, call
    args = call["args"]
    if "blocks" in args:
        assert validate_blocks(args["blocks"]) == [], args["blocks"]
    if "view" in args:
        assert validate_blocks(args["view"]["blocks"], 100, "/view/blocks", surface="modal") == []


def assert_escaped(calls: list[dict[str, Any]]) -> None:
    for call in calls:
        for text in parsed_texts(call):
            for raw in RAW:
                assert raw not in text, (call["method"], raw, text[:500])


def test_agent_text_is_escaped_everywhere_it_is_shown(stack: SlackStack) -> None:
    mark = stack.mark()
    label = f"{NASTY} {secrets.token_hex(4)}"
    run = stack.start_run("s-escape", label)
    assert stack.message(run, run.root_ts)["text"] == f"<@U0BOB> started *s-escape*: {mrkdwn_escape(label)}"
    question = stack.question(run)

    # The long reason is split over sections that each fit Slack's 3,000 characters.
    reason_sections = [b for b in question["blocks"] if b["type"] == "section" and b["block_id"].startswith("qh|")]
    assert len(reason_sections) >= 2
    assert all(len(b["text"]["text"]) <= 3000 for b in reason_sections)
    assert ESCAPED in reason_sections[0]["text"]["text"]
    # Labels and options are plain_text, which Slack shows literally.
    labels = [b["label"]["text"] for b in question["blocks"] if b["type"] == "input"]
    assert labels == [f"Why? {NASTY}", f"Pick {NASTY}"]

    notes = stack.replies(run, lambda m: m["text"].startswith(":hourglass_flowing_sand:"))
    assert notes[0]["text"] == f":hourglass_flowing_sand: {ESCAPED}"
    assert len(notes) == 2 and ESCAPED in notes[1]["text"] and len(notes[1]["text"]) <= 4000

    # Where the question shows up elsewhere: the asked person's Home tab, the admin's run list.
    for user in ("U0BOB", ADMIN):
        since = stack.mark()
        stack.event(app_home_opened_event(user))
        stack.wait_call("views.publish", lambda c, u=user: c["args"].get("user_id") == u, since=since)
    listing = stack.command("runs", user=ADMIN).json()
    assert ESCAPED[:40] in json.dumps(listing)
    assert_escaped([{"method": "ack", "args": listing}])

    answer = f"Because {NASTY}"
    resp, _ = stack.submit(run, question, {f"Why? {NASTY}": answer, f"Pick {NASTY}": "Tom & Jerry"})
    assert resp.status_code == 200
    final = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), "the result")
    assert final["text"] == f":white_check_mark: Done: {ESCAPED} answered {mrkdwn_escape(answer)} / b"
    locked = json.dumps(stack.message(run, question["ts"])["blocks"])
    assert json.dumps(mrkdwn_escape(answer))[1:-1] in locked

    stack.settle()
    calls = stack.calls(since=mark)
    shown = [c for c in calls if c["method"] in SURFACES]
    assert {c["method"] for c in shown} >= {"chat.postMessage", "chat.update", "views.publish"}
    for call in shown:
        assert_slack_accepts(call)
    assert_escaped(shown)
    assert any(ESCAPED in t for c in shown for t in parsed_texts(c))  # the text did get through, escaped


def test_a_question_too_big_for_slack_fails_the_run_with_a_clear_message(stack: SlackStack) -> None:
    mark = stack.mark()
    run = stack.start_run("s-huge", f"too-big-{secrets.token_hex(4)}")
    assert stack.wait_status(run, "failed") == "failed"
    failure = stack.wait_reply(run, lambda m: m["text"].startswith(":x: Failed"), "the failure message")
    assert "cannot be shown in Slack" in failure["text"]
    assert "characters of text" in failure["text"]  # says which limit
    error = stack.redis.hget(f"parley:run:{run.run_id}", "error").decode()
    assert error.startswith("this question cannot be shown in Slack")

    stack.settle()
    posts = stack.calls("chat.postMessage", lambda c: c["args"].get("thread_ts") == run.root_ts, since=mark)
    assert len(posts) == 1  # only the failure: no half-built question was attempted
    for call in stack.calls(since=mark):
        if call["method"] in SURFACES:
            assert_slack_accepts(call)
