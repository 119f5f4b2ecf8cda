"""Who may answer, end to end: user groups, escalation, "Reassign…" and the DMs to the people asked.

A real `parley serve` and real `parley worker`s (whose sweep drives escalation) on the test Redis,
the Web API stand-in, and every request signed and shaped as Slack sends it. Each test starts its
own runs and reads only its own threads and DMs.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from slack_forms import find_element, form_state, texts, users_select_action, users_select_state
from slack_payloads import block_actions_payload
from slack_stack import RunRef, SlackStack

pytestmark = [pytest.mark.system, pytest.mark.stack()]


def start(stack: SlackStack, agent: str, params: dict[str, Any], *, user: str = "U0BOB") -> RunRef:
    return stack.start_run(agent, f"{json.dumps(params)} {secrets.token_hex(4)}", user=user)


def dms(stack: SlackStack, user: str, since: int = 0) -> list[dict[str, Any]]:
    """Parley's posts in its DM with `user` (after the call-log position `since`), as the Web API saw them."""
    dm = "D" + user[1:]
    return stack.calls("chat.postMessage", lambda c: c["args"].get("channel") == dm and c["status"] == 200, since)


def refused(stack: SlackStack, user: str, words: str, since: int) -> None:
    stack.wait_ephemeral(user, lambda text: words in text, since=since)


def interrupt_of(stack: SlackStack, run: RunRef) -> dict[str, str]:
    assert stack.redis is not None
    iid = stack.redis.hget(f"parley:run:{run.run_id}", "interrupt")
    assert iid
    raw = stack.redis.hgetall(f"parley:interrupt:{iid.decode()}")
    return {k.decode(): v.decode() for k, v in raw.items()}


def history(stack: SlackStack, run: RunRef) -> list[dict[str, Any]]:
    assert stack.redis is not None
    return [json.loads(e) for e in stack.redis.lrange(f"parley:run:{run.run_id}:history", 0, -1)]


def finished(stack: SlackStack, run: RunRef) -> str:
    reply = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), f"run {run.run_id} to finish")
    return str(reply["text"])


def pick(stack: SlackStack, run: RunRef, question: dict[str, Any], *, user: str, target: str) -> None:
    """`user` picks `target` in the question's "Reassign…" select."""
    block, element = find_element(question["blocks"], "parley_reassign")
    payload = block_actions_payload(
        user=user,
        message=question,
        channel=run.channel,
        action=users_select_action(block, element, target),
        state_values={**form_state(question["blocks"], {}), **users_select_state(block, element, target)},
    )
    assert stack.interact(payload).status_code == 200


# ---- escalation --------------------------------------------------------------------------------
def test_escalation_after_escalate_after_adds_the_person_tells_them_and_accepts_their_answer(
    stack: SlackStack,
) -> None:
    run = start(stack, "s-form", {"assignees": ["U0ALICE"], "escalate_after": 6, "escalate_to": ["U0CAROL"]})
    question = stack.question(run)
    mark = stack.mark()
    resp, _ = stack.submit(run, question, {"Colour": "Red"}, user="U0CAROL")
    assert resp.status_code == 200
    refused(stack, "U0CAROL", "not yours to answer", mark)  # before the escalation
    assert "escalated_at" not in interrupt_of(stack, run)

    dm = stack.wait_call(
        "chat.postMessage", lambda c: c["args"].get("channel") == "D0CAROL", since=mark, what="the escalation DM"
    )
    assert "escalated to you" in dm["args"]["text"]
    link = f"/archives/{run.channel}/p{question['ts'].replace('.', '')}"
    assert link in dm["args"]["text"]
    updated = stack.wait_for(
        "the question to say it was escalated",
        lambda: m if "Escalated to <@U0CAROL>" in texts((m := stack.message(run, question["ts"]))["blocks"]) else None,
    )
    [entry] = [h for h in history(stack, run) if h["event"] == "escalated"]
    assert entry["by"] == "parley" and entry["detail"]["to"] == ["U0CAROL"]

    resp, _ = stack.submit(run, updated, {"Colour": "Blue"}, user="U0CAROL")
    assert resp.status_code == 200
    assert finished(stack, run).endswith("colour Blue, note -")
    assert len(dms(stack, "U0CAROL", mark)) == 1  # told once


# ---- reassign ----------------------------------------------------------------------------------
def test_reassign_moves_the_question_to_the_new_person_only(stack: SlackStack) -> None:
    run = start(stack, "s-form", {"assignees": ["U0CAROL"]}, user="U0BOB")
    question = stack.question(run)
    mark = stack.mark()
    pick(stack, run, question, user="U0CAROL", target="U0ALICE")
    stack.wait_ephemeral("U0CAROL", lambda t: "Reassigned to <@U0ALICE>" in t, since=mark)
    [dm] = dms(stack, "U0ALICE", mark)
    assert "<@U0CAROL> reassigned a question to you" in dm["args"]["text"] and "/archives/" in dm["args"]["text"]
    updated = stack.message(run, question["ts"])
    assert "<@U0CAROL> reassigned this to <@U0ALICE>" in texts(updated["blocks"])

    mark = stack.mark()
    resp, _ = stack.submit(run, updated, {"Colour": "Red"}, user="U0CAROL")
    assert resp.status_code == 200
    refused(stack, "U0CAROL", "not yours to answer", mark)
    resp, _ = stack.submit(run, updated, {"Colour": "Green"}, user="U0ALICE")
    assert resp.status_code == 200
    assert finished(stack, run).endswith("colour Green, note -")
    events = [(h["event"], h["by"]) for h in history(stack, run)]
    assert ("reassigned", "U0CAROL") in events and ("answered", "U0ALICE") in events
    [moved] = [h for h in history(stack, run) if h["event"] == "reassigned"]
    assert (moved["detail"]["from"], moved["detail"]["to"]) == (["U0CAROL"], "U0ALICE")


@pytest.mark.parametrize(("target", "words"), [("U0CAROL", "to yourself"), ("U0PARLEYBOT", "That's a bot")])
def test_reassign_to_oneself_or_a_bot_is_refused_and_changes_nothing(
    stack: SlackStack, target: str, words: str
) -> None:
    run = start(stack, "s-form", {"assignees": ["U0CAROL"]})
    question = stack.question(run)
    before = interrupt_of(stack, run)
    mark = stack.mark()
    pick(stack, run, question, user="U0CAROL", target=target)
    refused(stack, "U0CAROL", words, mark)
    assert interrupt_of(stack, run) == before
    assert stack.calls("chat.update", lambda c: c["args"].get("ts") == question["ts"], since=mark) == []


# ---- user groups -------------------------------------------------------------------------------
def test_a_user_groups_member_may_answer_and_a_non_member_may_not(stack: SlackStack) -> None:
    run = start(stack, "s-form", {"assignees": ["S0REVIEWERS"]}, user="U0BOB")
    question = stack.question(run)
    assert "Asked of <!subteam^S0REVIEWERS>" in texts(question["blocks"])
    assert json.loads(interrupt_of(stack, run)["groups"]) == {"S0REVIEWERS": ["U0ALICE", "U0CAROL"]}
    mark = stack.mark()
    resp, _ = stack.submit(run, question, {"Colour": "Red"}, user="U0BOB")
    assert resp.status_code == 200
    refused(stack, "U0BOB", "not yours to answer", mark)
    resp, _ = stack.submit(run, question, {"Colour": "Blue"}, user="U0CAROL")
    assert resp.status_code == 200
    assert finished(stack, run).endswith("colour Blue, note -")


# ---- DMs to the people asked -------------------------------------------------------------------
def test_one_dm_per_question_to_each_person_asked_but_the_starter(stack: SlackStack) -> None:
    mark = stack.mark()
    run = start(stack, "s-twice", {"assignees": ["U0BOB", "U0CAROL"]}, user="U0BOB")
    first = stack.question(run)
    resp, _ = stack.submit(run, first, {"Colour": "Red"}, user="U0CAROL")
    assert resp.status_code == 200
    second = stack.question(run, 2)
    resp, _ = stack.submit(run, second, {"Colour": "Blue"}, user="U0BOB")
    assert resp.status_code == 200
    assert finished(stack, run).endswith("colours Red then Blue")
    stack.settle()
    told = dms(stack, "U0CAROL", mark)
    links = [f"p{q['ts'].replace('.', '')}" for q in (first, second)]
    assert [[link in c["args"]["text"] for link in links] for c in told] == [[True, False], [False, True]]
    assert dms(stack, "U0BOB", mark) == []
