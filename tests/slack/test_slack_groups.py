"""Several questions at once, end to end: signed Slack payloads into `parley serve`, real `parley worker`s.

`s-all`, `s-any` and `s-each` (tests/slack_agents.py) count their executions in files
(`tests/effect_counters.py`), so "resumed once" is read from outside every process.
"""

from __future__ import annotations

import json
import secrets
import threading
from typing import Any

import httpx
import pytest
from effect_counters import count
from slack_forms import blocks_of, texts
from slack_stack import RunRef, SlackStack

from bot.slack.refusals import NO_LONGER_NEEDED

pytestmark = [pytest.mark.system, pytest.mark.stack()]

ALICE, BOB, CAROL = "U0ALICE", "U0BOB", "U0CAROL"


def start(stack: SlackStack, agent: str, params: dict[str, Any]) -> RunRef:
    return stack.start_run(agent, json.dumps(params) + f" {secrets.token_hex(4)}")


def questions(stack: SlackStack, run: RunRef, n: int) -> list[dict[str, Any]]:
    """The run's n question messages, once it is parked on them all."""
    asked = [stack.question(run, i, wait_open=False) for i in range(1, n + 1)]
    stack.wait_status(run, "paused")
    return asked


def answer(stack: SlackStack, run: RunRef, question: dict[str, Any], user: str, decision: str) -> httpx.Response:
    resp, _ = stack.submit(run, question, {"Decision": decision}, user=user)
    assert resp.status_code == 200 and resp.text == ""
    return resp


def final(stack: SlackStack, run: RunRef) -> str:
    reply = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), f"run {run.run_id} to finish")
    return str(reply["text"])


def updated(stack: SlackStack, ts: str, text: str, since: int) -> dict[str, Any]:
    return stack.wait_call(
        "chat.update",
        lambda c: c["args"].get("ts") == ts and text in texts(blocks_of(c)),
        since=since,
        what=f"message {ts} to show {text!r}",
    )


def test_ask_all_answered_in_reverse_order_resumes_once_with_both(stack: SlackStack) -> None:
    run = start(stack, "s-all", {"a": ALICE, "b": CAROL})
    deploy, db = questions(stack, run, 2)
    assert "Asked of <@U0ALICE>" in texts(deploy["blocks"]) and "Asked of <@U0CAROL>" in texts(db["blocks"])

    mark = stack.mark()
    answer(stack, run, db, CAROL, "Reject")  # the second question first
    updated(stack, db["ts"], "Answered by <@U0CAROL>", mark)  # locked at once, before the run resumes
    assert stack.status(run.run_id) == "paused"
    assert count(stack.data_dir, run.run_id, "exec") == 1

    answer(stack, run, deploy, ALICE, "Approve")
    assert final(stack, run) == ":white_check_mark: Done: deploy Approve, db Reject"
    assert count(stack.data_dir, run.run_id, "exec") == 2  # the first execution and one resume
    assert count(stack.data_dir, run.run_id, "effect") == 1
    assert "Answered by <@U0ALICE>" in texts(stack.message(run, deploy["ts"])["blocks"])


def test_ask_any_first_answer_wins_and_a_late_click_is_refused_as_no_longer_needed(stack: SlackStack) -> None:
    run = start(stack, "s-any", {"a": ALICE, "b": CAROL})
    first, second = questions(stack, run, 2)
    mark = stack.mark()
    answer(stack, run, second, CAROL, "Approve")
    assert final(stack, run) == ":white_check_mark: Done: second Approve"
    updated(stack, first["ts"], "No longer needed", mark)
    assert "Submit" not in json.dumps(stack.message(run, first["ts"])["blocks"])

    late = stack.mark()
    answer(stack, run, first, ALICE, "Approve")  # clicked on the message as it was before it was locked
    told = stack.wait_ephemeral(ALICE, lambda t: t == NO_LONGER_NEEDED, since=late)
    assert told["args"]["channel"] == run.channel
    assert count(stack.data_dir, run.run_id, "exec") == 2


def test_ask_each_quorum_two_of_three_clicking_at_once(stack: SlackStack) -> None:
    run = start(stack, "s-each", {"people": [ALICE, BOB, CAROL], "quorum": 2})
    (question,) = questions(stack, run, 1)
    assert "0 of 3 answered, 2 needed" in texts(question["blocks"])
    payloads = {u: stack.submit_payload(run, question, {"Decision": "Approve"}, user=u) for u in (ALICE, BOB, CAROL)}
    mark = stack.mark()
    barrier, replies = threading.Barrier(3), {}

    def click(user: str) -> None:
        barrier.wait()
        replies[user] = stack.interact(payloads[user])

    threads = [threading.Thread(target=click, args=(u,)) for u in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert {u: r.status_code for u, r in replies.items()} == {ALICE: 200, BOB: 200, CAROL: 200}

    done = final(stack, run)
    refused = stack.wait_call("chat.postEphemeral", lambda c: c["status"] == 200, since=mark)
    loser = refused["args"]["user"]
    assert refused["args"]["text"] == NO_LONGER_NEEDED
    winners = sorted(u for u in payloads if u != loser)
    assert done == ":white_check_mark: Done: " + "; ".join(f"{u}: Approve" for u in winners)
    stack.settle()
    assert len(stack.calls("chat.postEphemeral", since=mark)) == 1  # exactly one of the three refused
    assert count(stack.data_dir, run.run_id, "exec") == 2
    locked = texts(stack.message(run, question["ts"])["blocks"])
    assert "2 of 3 answered, 2 needed: " + ", ".join(f"<@{u}>" for u in winners) in locked
    assert f"No longer needed from <@{loser}>" in locked


def test_a_progress_update_landing_after_the_lock_leaves_the_message_locked(stack: SlackStack) -> None:
    """Alice's progress update is held at Slack until Bob's answer has closed and locked the question.

    Slack keeps the last update. The `show` job that drew Alice's progress reads the group again
    after its update and draws it locked, so the controls never come back on a closed question.
    """
    run = start(stack, "s-each", {"people": [ALICE, BOB, CAROL], "quorum": 2})
    (question,) = questions(stack, run, 1)
    stack.settle(quiet=0.3)
    mark = stack.mark()
    stack.ws.faults.delay_next("chat.update", 4.0)
    answer(stack, run, question, ALICE, "Approve")
    stack.wait_for("Alice's progress update to reach Slack", lambda: stack.ws.faults.pending() == 0)
    answer(stack, run, question, BOB, "Reject")
    assert final(stack, run) == ":white_check_mark: Done: U0ALICE: Approve; U0BOB: Reject"
    updated(stack, question["ts"], "1 of 3 answered, 2 needed: <@U0ALICE>", mark)  # the held one, served
    stack.settle()
    shown = stack.message(run, question["ts"])
    assert "No longer needed from <@U0CAROL>" in texts(shown["blocks"]), texts(shown["blocks"])
    assert "parley_submit" not in json.dumps(shown["blocks"])


def test_ask_each_shows_progress_and_nobody_answers_twice_or_for_another(stack: SlackStack) -> None:
    run = start(stack, "s-each", {"people": [ALICE, CAROL], "show": True})
    (question,) = questions(stack, run, 1)
    mark = stack.mark()
    answer(stack, run, question, ALICE, "Reject")
    progress = updated(stack, question["ts"], "1 of 2 answered: <@U0ALICE>", mark)
    shown = texts(blocks_of(progress))
    assert "<@U0ALICE>: Decision: Reject" in shown and "parley_submit" in json.dumps(blocks_of(progress))

    again = stack.mark()
    answer(stack, run, question, ALICE, "Approve")
    stack.wait_ephemeral(ALICE, lambda t: t.startswith("This question was already answered by <@U0ALICE>"), since=again)
    answer(stack, run, question, BOB, "Approve")  # Bob was not asked
    stack.wait_ephemeral(BOB, lambda t: "not yours to answer" in t and "<@U0CAROL>" in t, since=again)
    assert stack.status(run.run_id) == "paused"

    answer(stack, run, question, CAROL, "Approve")
    assert final(stack, run) == ":white_check_mark: Done: U0ALICE: Reject; U0CAROL: Approve"


def test_the_release_agent_mentions_the_reviewers_who_signed_off(stack: SlackStack) -> None:
    run = stack.start_run("release", f"api v2.0.{secrets.randbelow(1000)} {ALICE} {CAROL} <@U0MALLORY>")
    (question,) = questions(stack, run, 1)
    for user in (ALICE, CAROL):
        resp, _ = stack.submit(run, question, {"Your sign-off": "Ship it"}, user=user)
        assert resp.status_code == 200 and resp.text == ""
    done = final(stack, run)
    assert done.endswith(f", signed off by <@{ALICE}>, <@{CAROL}>."), done


def test_the_home_tab_lists_each_question_per_person(stack: SlackStack) -> None:
    run = start(stack, "s-all", {"a": ALICE, "b": CAROL})
    questions(stack, run, 2)
    carol = texts(stack.open_home(CAROL)["blocks"])
    assert "Migrate the database?" in carol and "Deploy?" not in carol
    alice = texts(stack.open_home(ALICE)["blocks"])  # an admin: also the run's progress, question by question
    assert "Deploy?" in alice
    assert "• `deploy`: waiting on <@U0ALICE>" in alice and "• `db`: waiting on <@U0CAROL>" in alice


def test_ask_each_tells_each_person_asked_but_the_starter_once_by_dm(stack: SlackStack) -> None:
    mark = stack.mark()
    run = start(stack, "s-each", {"people": [ALICE, BOB, CAROL]})  # started by Bob
    (question,) = questions(stack, run, 1)
    stack.settle()
    link = f"p{question['ts'].replace('.', '')}"
    for person in (ALICE, CAROL):
        told = stack.calls(
            "chat.postMessage",
            lambda c, p=person: c["args"].get("channel") == "D" + p[1:] and c["status"] == 200,
            mark,
        )
        assert [link in c["args"]["text"] for c in told] == [True]  # one DM, linking the shared message
    assert stack.calls("chat.postMessage", lambda c: c["args"].get("channel") == "D" + BOB[1:], mark) == []
