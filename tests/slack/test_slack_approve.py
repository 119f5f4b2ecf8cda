"""Edit-and-approve through Slack's wire formats: the shipped `deploy` agent's `run.approve`.

Signed clicks and view submissions go to the bot; the Web API is the loopback stand-in; the
agent runs on real RQ workers. An approver lowers `replicas` in the Edit… form and the agent
deploys what was approved; a rejection's reason reaches the agent; a newer release landing
before the approval voids it and asks again showing old → new.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from slack_forms import blocks_of, button_action, find_element, is_question, texts
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import RunRef, SlackStack

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1)]

USER = "U0BOB"


def service() -> str:
    return f"api-{secrets.token_hex(4)}"


def click(stack: SlackStack, run: RunRef, question: dict[str, Any], action_id: str) -> dict[str, Any] | None:
    """Click `action_id` on `question` as the run's starter; the modal it opened as Slack holds it, if any."""
    block, button = find_element(question["blocks"], action_id)
    mark = stack.mark()
    payload = block_actions_payload(
        user=USER,
        message=question,
        channel=run.channel,
        action=button_action(block, button),
        trigger=stack.ws.issue_trigger(USER),
    )
    assert stack.interact(payload).status_code == 200
    if action_id == "parley_approve":
        return None
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark, what="the modal to open")
    return stack.ws.open_views(USER)[-1]


def submit_view(stack: SlackStack, view: dict[str, Any], values: dict[str, dict[str, Any]]) -> None:
    """Submit `view` with `values` by item id (the element state Slack sends)."""
    iid = view["private_metadata"].split("|")[0]
    state = {f"f|{iid}|{item}": {"answer": value} for item, value in values.items()}
    resp = stack.interact(view_submission_payload(user=USER, view=view, state_values=state))
    assert resp.status_code == 200 and resp.text == "", resp.text


def final(stack: SlackStack, run: RunRef) -> str:
    reply = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), f"run {run.run_id} to finish")
    return str(reply["text"])


def deployed(stack: SlackStack, run: RunRef) -> list[dict[str, Any]]:
    lines = (stack.data_dir / "deployments.jsonl").read_text().splitlines()
    return [e for line in lines if (e := json.loads(line))["run_id"] == run.run_id]


def test_the_approver_lowers_replicas_and_the_agent_deploys_what_was_approved(stack: SlackStack) -> None:
    name = service()
    run = stack.start_run("deploy", f"{name} v1.4.2 to production replicas=4")
    question = stack.question(run, 1)
    shown = texts(question["blocks"])
    assert f"Deploy {name} v1.4.2 to production" in shown
    for field in (f"*service*\n{name}", "*version*\nv1.4.2", "*target*\nproduction", "*replicas*\n4"):
        assert field in shown
    row = [e for b in question["blocks"] if b["type"] == "actions" for e in b["elements"] if e["type"] == "button"]
    assert [e["text"]["text"] for e in row] == ["Approve", "Edit…", "Reject"]

    form = click(stack, run, question, "parley_open_form")
    assert form is not None
    [replicas] = [b for b in form["blocks"] if b["type"] == "input"]  # only replicas is editable
    assert replicas["element"]["type"] == "number_input" and replicas["element"]["initial_value"] == "4"
    assert f"*service*\n{name}" in texts(form["blocks"])  # the fixed args are shown, not editable
    submit_view(stack, form, {"replicas": {"type": "number_input", "value": "2"}})

    assert final(stack, run) == (
        f":white_check_mark: Done: Deployment of {name} v1.4.2 to production with 2 replicas approved"
        " and recorded (edited: replicas 4 → 2)."
    )
    [entry] = deployed(stack, run)
    assert (entry["replicas"], entry["edited"], entry["decision"], entry["by"]) == (2, ["replicas"], "approve", USER)
    locked = texts(stack.message(run, question["ts"])["blocks"])
    assert ":white_check_mark: Approved" in locked and "*replicas*\n4 → 2 (edited)" in locked
    assert f"edited by <@{USER}>: replicas" in locked
    history = [json.loads(h) for h in stack.redis.lrange(f"parley:run:{run.run_id}:history", 0, -1)]
    assert [h["detail"]["fields"] for h in history if h["event"] == "approved with edits"] == [["replicas"]]


def test_a_rejection_s_reason_reaches_the_agent(stack: SlackStack) -> None:
    name = service()
    run = stack.start_run("deploy", f"{name} v2.0.0 to staging")
    question = stack.question(run, 1)
    form = click(stack, run, question, "parley_reject")
    assert form is not None and form["callback_id"] == "parley_reject_form"
    submit_view(stack, form, {"_reason": {"type": "plain_text_input", "value": "tests are red"}})
    done = final(stack, run)
    assert done == f":white_check_mark: Done: Deployment of {name} v2.0.0 to staging rejected: tests are red"
    [entry] = deployed(stack, run)
    assert (entry["decision"], entry["reason"], entry["replicas"]) == ("reject", "tests are red", 3)
    locked = texts(stack.message(run, question["ts"])["blocks"])
    assert ":x: Rejected" in locked and "tests are red" in locked


def test_changed_proposed_args_void_the_approval_and_ask_again_showing_old_and_new(stack: SlackStack) -> None:
    name = service()
    release = stack.data_dir / "releases" / name
    release.parent.mkdir(parents=True, exist_ok=True)
    release.write_text("v1.0.0")
    run = stack.start_run("deploy", f"{name} to production")  # the version is read live on every replay
    first = stack.question(run, 1)
    assert "*version*\nv1.0.0" in texts(first["blocks"])

    release.write_text("v1.0.1")  # a newer release lands before the approval
    mark = stack.mark()
    click(stack, run, first, "parley_approve")
    second = stack.question(run, 2)
    posted = stack.wait_call("chat.postMessage", lambda c: is_question({"blocks": blocks_of(c)}), since=mark)
    again = texts(blocks_of(posted))
    assert "• version: v1.0.0 → v1.0.1" in again and "*version*\nv1.0.1" in again
    assert deployed_count(stack, run) == 0  # never acted on the stale approval

    click(stack, run, second, "parley_approve")
    assert final(stack, run) == (
        f":white_check_mark: Done: Deployment of {name} v1.0.1 to production with 3 replicas approved and recorded."
    )
    [entry] = deployed(stack, run)
    assert entry["version"] == "v1.0.1" and entry["edited"] == []


def deployed_count(stack: SlackStack, run: RunRef) -> int:
    path = stack.data_dir / "deployments.jsonl"
    return len(deployed(stack, run)) if path.exists() else 0
