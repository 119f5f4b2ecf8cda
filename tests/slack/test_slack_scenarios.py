"""Parley end to end through Slack's wire formats: a real `parley serve`, real workers, the Web API stand-in.

Every request is signed and shaped the way Slack sends it; every assertion reads what the bot
sent back (HTTP acks) or what the stand-in received (posts, updates, ephemerals, views). One
server and two workers serve the whole module, so each test starts its own runs and looks only
at its own threads.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from slack_forms import blocks_of, button_action, find_element, form_state, is_question, option_object, texts
from slack_payloads import (
    ADMIN,
    FORM,
    app_home_opened_event,
    block_actions_payload,
    block_suggestion_payload,
    home_actions_payload,
    interaction_body,
    thread_reply_event,
    view_submission_payload,
)
from slack_stack import SlackStack, snapshot

from workers.agents.tracker import read_tickets

pytestmark = [pytest.mark.system, pytest.mark.stack()]

ACK_DEADLINE = 3.0  # seconds Slack waits for an ack


def tag() -> str:
    return secrets.token_hex(4)


def controls(message: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Input elements by label."""
    return {b["label"]["text"]: b["element"] for b in message["blocks"] if b["type"] == "input"}


def is_locked(message: dict[str, Any]) -> bool:
    blocks = message.get("blocks") or []
    return bool(blocks) and all(b["type"] not in ("input", "actions") for b in blocks)


def wait_locked(stack: SlackStack, run: Any, question: dict[str, Any]) -> dict[str, Any]:
    """The chat.update that locked `question`, once it happened; returns the message as updated."""
    stack.wait_call(
        "chat.update",
        lambda c: c["args"].get("ts") == question["ts"] and c["status"] == 200,
        what=f"the question {question['ts']} to be locked",
    )
    message = stack.message(run, question["ts"])
    assert is_locked(message), message["blocks"]
    return message


def final_reply(stack: SlackStack, run: Any) -> dict[str, Any]:
    return stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), f"run {run.run_id} to finish")


# ---- 1. a ticket from the slash command to the tracker -----------------------------------------
def test_ticket_from_slash_command_to_tracker(stack: SlackStack) -> None:
    mark = stack.mark()
    resp = stack.command("ticket Create ticket for login issue", user="U0BOB")
    assert resp.status_code == 200
    assert resp.text == ""  # a bare ack: the run is announced in the channel, not ephemerally
    assert resp.elapsed.total_seconds() < ACK_DEADLINE

    run = stack.run_for("ticket", "Create ticket for login issue", user="U0BOB", channel="C0GENERAL")
    root = stack.message(run, run.root_ts)
    assert root["text"] == "<@U0BOB> started *ticket*: Create ticket for login issue"
    [root_call] = stack.calls("chat.postMessage", lambda c: c["args"].get("text") == root["text"], since=mark)
    assert root_call["args"]["channel"] == "C0GENERAL" and "thread_ts" not in root_call["args"]

    question = stack.question(run)
    assert question["thread_ts"] == run.root_ts
    asked = stack.wait_call("chat.postMessage", lambda c: is_question({"blocks": blocks_of(c)}), since=mark)
    assert asked["args"]["thread_ts"] == run.root_ts and asked["args"]["channel"] == "C0GENERAL"
    form = controls(question)
    assert {label: e["type"] for label, e in form.items()} == {
        "Describe the bug": "plain_text_input",
        "Who is affected?": "static_select",
        "Severity": "static_select",
        "Components": "multi_static_select",
        "Due date": "datepicker",
    }
    assert form["Describe the bug"]["multiline"] is True
    assert [o["text"]["text"] for o in form["Severity"]["options"]] == ["Critical", "High", "Medium", "Low"]
    _, submit = find_element(question["blocks"], "parley_submit")
    assert submit["text"]["text"] == "Submit"

    resp, _ = stack.submit(
        run,
        question,
        {
            "Describe the bug": "Login fails on Safari\nafter the 2.3 update",
            "Who is affected?": "Some users",
            "Severity": "High",
            "Components": ["Login", "Web app"],
            "Due date": "2026-12-01",
        },
    )
    assert resp.status_code == 200 and resp.text == ""
    assert resp.elapsed.total_seconds() < ACK_DEADLINE

    locked = wait_locked(stack, run, question)
    shown = texts(locked["blocks"])
    assert "Answered by <@U0BOB>" in shown
    for answer in ("Login fails on Safari", "Some users", "High", "Login, Web app", "2026-12-01"):
        assert answer in shown, (answer, shown)

    final = final_reply(stack, run)
    assert "PAR-1" in final["text"]
    assert "Severity High" in final["text"] and "components Login, Web app" in final["text"]
    assert stack.wait_status(run, "succeeded") == "succeeded"
    [ticket] = read_tickets(stack.data_dir / "tickets.jsonl")
    assert ticket["id"] == "PAR-1" and ticket["run_id"] == run.run_id
    assert ticket["severity"] == "sev2" and ticket["components"] == ["Login", "Web app"]
    assert ticket["description"] == "Login fails on Safari\nafter the 2.3 update"
    assert ticket["reporter"] == "U0BOB"


def test_deploy_approved_from_the_slash_command_deploys_what_was_proposed(stack: SlackStack) -> None:
    target = f"api-{tag()} v1.4.2"
    run = stack.start_run("deploy", target, user="U0CAROL")  # U0BOB starts the most runs here: within his limit
    first = stack.question(run, 1)
    service = target.split()[0]
    shown = texts(first["blocks"])
    for field in (f"*service*\n{service}", "*version*\nv1.4.2", "*target*\nproduction", "*replicas*\n3"):
        assert field in shown
    block, button = find_element(first["blocks"], "parley_approve")
    click = block_actions_payload(
        user=run.started_by, message=first, channel=run.channel, action=button_action(block, button)
    )
    assert stack.interact(click).status_code == 200
    wait_locked(stack, run, first)
    final = final_reply(stack, run)
    assert final["text"] == (
        f":white_check_mark: Done: Deployment of {target} to production with 3 replicas approved and recorded."
    )
    log = [json.loads(line) for line in (stack.data_dir / "deployments.jsonl").read_text().splitlines()]
    assert [(e["decision"], e["replicas"]) for e in log if e["run_id"] == run.run_id] == [("approve", 3)]


# ---- 2. the command's other uses: help, unknown agents, the runs list ----------------------------
@pytest.mark.parametrize("text", ["", "help"])
def test_help_lists_the_agents_ephemerally(stack: SlackStack, text: str) -> None:
    resp = stack.command(text, user="U0BOB")
    assert resp.status_code == 200
    body = resp.json()
    assert body["response_type"] == "ephemeral"
    for name in ("ticket", "deploy", "s-form"):
        assert f"*{name}*" in body["text"]


def test_an_unknown_agent_is_refused_with_the_list(stack: SlackStack) -> None:
    mark = stack.mark()
    resp = stack.command("nosuch do things", user="U0BOB")
    body = resp.json()
    assert body["response_type"] == "ephemeral"
    assert "There is no agent called `nosuch`" in body["text"]
    assert "*ticket*" in body["text"] and "*deploy*" in body["text"]
    stack.settle()
    assert stack.calls("chat.postMessage", lambda c: "nosuch" in c["args"].get("text", ""), since=mark) == []


def test_runs_lists_paused_runs_for_admins_only(stack: SlackStack) -> None:
    label = f"listed-{tag()}"
    run = stack.start_run("s-form", label)
    stack.question(run)
    stack.wait_status(run, "paused")

    listing = stack.command("runs", user=ADMIN).json()
    assert listing["response_type"] == "ephemeral"
    shown = texts(listing["blocks"])
    assert label in shown and "<@U0BOB>" in shown and "paused" in shown

    refused = stack.command("runs", user="U0BOB").json()
    assert refused == {"response_type": "ephemeral", "text": "Only Parley admins can list runs."}


# ---- 4. typed replies in the thread ----------------------------------------------------------
def reply(stack: SlackStack, run: Any, user: str, text: str) -> Any:
    """`user` types `text` in the run's thread: the message lands in the workspace, the event reaches the bot."""
    posted = stack.ws.post_message(run.channel, text, user=user, thread_ts=run.root_ts)
    event = thread_reply_event(user=user, channel=run.channel, text=text, ts=posted["ts"], thread_ts=run.root_ts)
    resp = stack.event(event)
    assert resp.status_code == 200
    return posted


@pytest.mark.parametrize(
    ("typed", "picked"), [("2", "Staging US"), ("the second one", "Staging US"), ("production", "Production")]
)
def test_a_typed_reply_answers_a_one_choice_question(stack: SlackStack, typed: str, picked: str) -> None:
    run = stack.start_run("s-pick", f"reply-{tag()}")
    question = stack.question(run)
    stack.wait_status(run, "paused")
    reply(stack, run, "U0BOB", typed)
    locked = wait_locked(stack, run, question)
    assert "Answered by <@U0BOB>" in texts(locked["blocks"]) and picked in texts(locked["blocks"])
    value = {"Staging US": "Staging US", "Production": "Production"}[picked]
    assert final_reply(stack, run)["text"].endswith(f"picked {value}")


def test_an_ambiguous_reply_lists_the_options(stack: SlackStack) -> None:
    run = stack.start_run("s-pick", f"ambiguous-{tag()}")
    stack.question(run)
    stack.wait_status(run, "paused")
    before = snapshot(stack.redis)
    mark = stack.mark()
    reply(stack, run, "U0BOB", "staging")
    note = stack.wait_ephemeral("U0BOB", lambda t: "couldn't tell" in t, since=mark)
    assert "1. Staging EU, 2. Staging US, 3. Production" in note["args"]["text"]
    assert note["args"]["thread_ts"] == run.root_ts
    stack.settle()
    # Only the event's delivery is remembered (so a redelivery is ignored); the run is untouched.
    unseen = lambda snap: {k: v for k, v in snap.items() if not k.startswith(b"parley:seen:")}  # noqa: E731
    assert unseen(snapshot(stack.redis)) == unseen(before)
    assert stack.status(run.run_id) == "paused"


def test_a_reply_by_someone_not_asked_is_refused(stack: SlackStack) -> None:
    run = stack.start_run("s-pick", '{"assignees": ["U0BOB"]} ' + f"others-{tag()}")
    question = stack.question(run)
    stack.wait_status(run, "paused")
    mark = stack.mark()
    reply(stack, run, "U0CAROL", "2")
    note = stack.wait_ephemeral("U0CAROL", lambda t: "not yours to answer" in t, since=mark)
    assert "<@U0BOB>" in note["args"]["text"]
    stack.settle()
    assert stack.status(run.run_id) == "paused"
    assert stack.calls("chat.update", lambda c: c["args"].get("ts") == question["ts"], since=mark) == []


def test_one_click_choice_button_answers(stack: SlackStack) -> None:
    run = stack.start_run("s-pick", f"click-{tag()}")
    question = stack.question(run)
    block, button = find_element(question["blocks"], lambda a: a.startswith("parley_choose_"))
    assert block["type"] == "actions"
    block, button = next(
        (block, e)
        for block in question["blocks"]
        if block["type"] == "actions"
        for e in block["elements"]
        if e["text"]["text"] == "Production"
    )
    payload = block_actions_payload(
        user="U0BOB", message=question, channel=run.channel, action=button_action(block, button)
    )
    assert stack.interact(payload).status_code == 200
    wait_locked(stack, run, question)
    assert final_reply(stack, run)["text"].endswith("picked Production")


# ---- 5. answering in a modal -----------------------------------------------------------------
def test_answer_in_a_form(stack: SlackStack) -> None:
    run = stack.start_run("s-form", f"modal-{tag()}")
    question = stack.question(run)
    stack.wait_status(run, "paused")
    block, button = find_element(question["blocks"], "parley_open_form")
    mark = stack.mark()
    trigger = stack.ws.issue_trigger("U0BOB")
    payload = block_actions_payload(
        user="U0BOB", message=question, channel=run.channel, action=button_action(block, button), trigger=trigger
    )
    assert stack.interact(payload).status_code == 200
    opened = stack.wait_call("views.open", since=mark)
    assert opened["status"] == 200 and opened["error"] is None
    assert opened["args"]["trigger_id"] == trigger
    [view] = stack.ws.open_views("U0BOB")
    assert view["type"] == "modal" and view["callback_id"] == "parley_form"
    fields = {b["label"]["text"]: b["block_id"] for b in view["blocks"] if b["type"] == "input"}
    assert fields.keys() == {"Colour", "Note"}

    # Missing the required colour: the modal shows the error under that field.
    missing = view_submission_payload(
        user="U0BOB", view=view, state_values=form_state(view["blocks"], {"Note": "in a hurry"})
    )
    resp = stack.interact(missing)
    assert resp.status_code == 200
    assert resp.json() == {"response_action": "errors", "errors": {fields["Colour"]: "an answer is required"}}
    assert stack.status(run.run_id) == "paused"

    valid = view_submission_payload(
        user="U0BOB", view=view, state_values=form_state(view["blocks"], {"Colour": "Green", "Note": "in a hurry"})
    )
    resp = stack.interact(valid)
    assert resp.status_code == 200 and resp.text == ""
    locked = wait_locked(stack, run, question)
    assert "Answered by <@U0BOB>" in texts(locked["blocks"])
    assert final_reply(stack, run)["text"].endswith("colour Green, note in a hurry")


# ---- 6. the App Home tab -----------------------------------------------------------------------
def test_app_home_shows_waiting_questions_and_admin_controls(stack: SlackStack) -> None:
    reason = f"Pick a colour for home-{tag()}"
    run = stack.start_run("s-form", json.dumps({"reason": reason}) + " home", user="U0CAROL")
    question = stack.question(run)
    stack.wait_status(run, "paused")

    mark = stack.mark()
    assert stack.event(app_home_opened_event("U0CAROL")).status_code == 200
    published = stack.wait_call("views.publish", lambda c: c["args"].get("user_id") == "U0CAROL", since=mark)
    assert published["status"] == 200
    home = published["args"]["view"]
    assert home["type"] == "home"
    shown = texts(home["blocks"])
    assert "Waiting on you" in shown
    link = f"/archives/{run.channel}/p{question['ts'].replace('.', '')}"
    assert any(link in t and reason in t for t in shown.splitlines()), shown
    assert "parley_admin_cancel" not in json.dumps(home)  # not an admin

    mark = stack.mark()
    assert stack.event(app_home_opened_event(ADMIN)).status_code == 200
    published = stack.wait_call("views.publish", lambda c: c["args"].get("user_id") == ADMIN, since=mark)
    admin_home = stack.ws.home(ADMIN)
    assert admin_home is not None and admin_home["blocks"] == published["args"]["view"]["blocks"]
    row = next(b for b in admin_home["blocks"] if b.get("block_id") == f"hra|{run.run_id}")
    assert [e["text"]["text"] for e in row["elements"]] == ["Cancel", "Remind", "Inspect"]

    # Remind: the assignee is mentioned again in the run's thread.
    _, remind = find_element([row], "parley_admin_remind")
    mark = stack.mark()
    resp = stack.interact(home_actions_payload(user=ADMIN, view=admin_home, action=button_action(row, remind)))
    assert resp.status_code == 200
    reminder = stack.wait_reply(run, lambda m: m["text"].startswith(":bell: Reminder"), "the reminder")
    assert "<@U0CAROL>" in reminder["text"]
    stack.wait_call("views.publish", lambda c: c["args"].get("user_id") == ADMIN, since=mark)  # refreshed
    stack.settle()

    # A forged Cancel from someone who is not an admin changes nothing.
    before = snapshot(stack.redis)
    _, cancel = find_element([row], "parley_admin_cancel")
    mark = stack.mark()
    resp = stack.interact(home_actions_payload(user="U0BOB", view=admin_home, action=button_action(row, cancel)))
    assert resp.status_code == 200
    stack.wait_call(
        "chat.postMessage",
        lambda c: c["args"].get("channel") == "U0BOB" and "Only Parley admins" in c["args"].get("text", ""),
        since=mark,
    )
    stack.settle()
    assert snapshot(stack.redis) == before
    assert stack.status(run.run_id) == "paused"
    assert not is_locked(stack.message(run, question["ts"]))


# ---- external selects load their options as you type -----------------------------------------
def test_options_load_for_a_long_select_and_the_loaded_choice_is_accepted(stack: SlackStack) -> None:
    run = stack.start_run("s-many", f"regions-{tag()}")
    question = stack.question(run)
    region = next(b for b in question["blocks"] if b["type"] == "input" and b["label"]["text"] == "Region")
    assert region["element"]["type"] == "external_select"

    payload = block_suggestion_payload(
        user="U0BOB",
        message=question,
        channel=run.channel,
        block_id=region["block_id"],
        action_id=region["element"]["action_id"],
        value="042",
    )
    resp = stack.send(interaction_body(payload), FORM)
    assert resp.status_code == 200
    [option] = resp.json()["options"]
    assert option["value"] == "region-042" and option["text"]["text"].startswith("Region 042")

    chosen = option_object(option["text"]["text"], option["value"])
    resp, _ = stack.submit(run, question, {"Region": chosen})
    assert resp.status_code == 200
    wait_locked(stack, run, question)
    assert final_reply(stack, run)["text"].endswith("region region-042")


# ---- 8. rate limited while posting a question ------------------------------------------------
def test_a_rate_limited_question_is_posted_exactly_once(stack: SlackStack) -> None:
    gate = f"gate-{tag()}"
    run = stack.start_run("s-gate", json.dumps({"gate": gate}))
    stack.wait_status(run, "running")
    # The gate step's plan is posted in the thread first: the 429 must fall on the question's post.
    in_thread = lambda c: c["args"].get("thread_ts") == run.root_ts  # noqa: E731
    stack.wait_call("chat.postMessage", in_thread, what="the run's plan in its thread")
    stack.settle(quiet=0.5)
    mark = stack.mark()
    stack.ws.faults.fail_next("chat.postMessage", status=429, retry_after=1)
    (stack.data_dir / "gates").mkdir(exist_ok=True)
    (stack.data_dir / "gates" / gate).touch()

    question = stack.question(run)
    stack.wait_status(run, "paused")
    stack.settle(quiet=1.5)
    posts = stack.calls("chat.postMessage", in_thread, since=mark)
    shown = [(c["status"], c["args"].get("text", "")[:60]) for c in posts]
    assert [c["status"] for c in posts] == [429, 200], f"{shown}\n{stack.logs(20000)}"
    assert all(is_question({"blocks": blocks_of(c)}) for c in posts)
    assert [m["ts"] for m in stack.thread(run) if is_question(m)] == [question["ts"]]
