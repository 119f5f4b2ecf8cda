"""The playground's requests to the bot have Slack's documented shapes and Slack's signature.

Payloads are built from what Parley really posts (its question message, form modal and
Home tab) filled in as a person would, checked against the documented shapes in
`payload_shapes`, verified with slack_sdk's `SignatureVerifier`, and finally dispatched to
a real bolt `App` with request verification on: the bot cannot tell them from Slack's.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from payload_shapes import (
    DOCS_SIGNED_REQUEST,
    DOCS_SLASH_COMMAND,
    check_app_home_opened,
    check_block_actions,
    check_block_suggestion,
    check_event_callback,
    check_message_event,
    check_signed_headers,
    check_slash_command,
    check_view_submission,
)
from slack_bolt import App
from slack_bolt.request import BoltRequest
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from bot.playground import LoopbackServer, Workspace, make_webapi_app
from bot.playground import slack_sender as ss
from bot.slack import blocks
from bot.slack.form_state import parse_state_values
from workers.agents.ticket import details_request
from workers.runtime.admin import RunSummary

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SECRET = "playground-test-secret"
IID = "qTestInterrupt01"
ALICE, BOB = "U0ALICE", "U0BOB"
REQUEST = details_request("Login fails on Safari")
FILLED = {
    "description": "Login fails on Safari.\nSteps: open /login & submit.",
    "affected": "Some users",
    "severity": "sev2",
    "components": ["Login", "Web app"],
    "due": "2026-12-01",
}


def inputs(prefix: str, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{prefix}|{item}": {"answer": raw} for item, raw in values.items()}


@pytest.fixture
def ws() -> Workspace:
    return Workspace()


@pytest.fixture
def question(ws: Workspace) -> ss.MessageSurface:
    root = ws.post_message("C0GENERAL", "<@U0ALICE> started *ticket*")
    posted = ws.post_message(
        "C0GENERAL", "Question", blocks.question_blocks(REQUEST, IID, assignees=[ALICE]), thread_ts=root["ts"]
    )
    return ss.MessageSurface("C0GENERAL", posted)


def signed(body: bytes, content_type: str) -> dict[str, str]:
    headers = ss.signed_headers(SECRET, body, content_type)
    assert check_signed_headers(headers) == []
    assert SignatureVerifier(SECRET).is_valid_request(body, headers)
    assert not SignatureVerifier("another-secret").is_valid_request(body, headers)
    return headers


def test_the_checkers_accept_slacks_own_example_and_reject_broken_ones() -> None:
    fields = dict(parse_qsl(DOCS_SLASH_COMMAND))
    assert check_slash_command(fields) == []
    assert check_slash_command({k: v for k, v in fields.items() if k != "trigger_id"}) == [
        "slash_command: missing 'trigger_id'"
    ]
    assert check_slash_command({**fields, "command": "weather"}) == ["slash_command.command must start with '/'"]


def imports_hmac(path: Path) -> bool:
    """Whether a module imports ``hmac``, the sign of a signer written by hand."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "hmac" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "hmac":
            return True
    return False


def test_slack_signatures_are_slack_sdks_not_a_copy() -> None:
    """The playground and the tests sign with slack_sdk's own signer.

    Parley's own signatures, for webhooks and OAuth state, live in ``workers``.
    """
    modules = [p for folder in ("bot", "parley", "bench", "tests") for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(modules) > 100
    assert [str(p.relative_to(ROOT)) for p in modules if imports_hmac(p)] == []


def test_the_hmac_check_finds_a_signer_written_by_hand(tmp_path: Path) -> None:
    for source in ("import hmac\n", "import json, hmac\n", "from hmac import new\n", "def f():\n    import hmac\n"):
        (tmp_path / "signer.py").write_text(source)
        assert imports_hmac(tmp_path / "signer.py"), source
    (tmp_path / "signer.py").write_text("import hashlib\nfrom slack_sdk.signature import SignatureVerifier\n")
    assert not imports_hmac(tmp_path / "signer.py")


def test_signature_matches_slacks_worked_example() -> None:
    doc = DOCS_SIGNED_REQUEST
    assert ss.sign(doc["signing_secret"], doc["timestamp"], doc["body"].encode()) == doc["signature"]


def test_slash_command_is_a_signed_form_with_every_documented_field(ws: Workspace) -> None:
    trigger = ws.issue_trigger(ALICE)
    fields = ss.slash_command(
        ws, "tok", user=ALICE, channel="C0GENERAL", command="/parley", text="ticket Create ticket for login issue",
        trigger_id=trigger, response_url="http://127.0.0.1/hooks/x",
    )  # fmt: skip
    body = ss.form_body(fields)
    signed(body, ss.FORM)
    decoded = dict(parse_qsl(body.decode(), keep_blank_values=True))
    assert check_slash_command(decoded) == []
    assert decoded["text"] == "ticket Create ticket for login issue" and decoded["channel_name"] == "general"
    assert (decoded["user_name"], decoded["team_domain"]) == ("alice", "parley-playground")
    assert ws.claim_trigger(trigger) == ALICE


def test_submit_click_carries_every_answer_in_slacks_state_values(ws: Workspace, question: ss.MessageSurface) -> None:
    payload = ss.block_actions(
        ws, "tok", user=ALICE, surface=question, block_id=f"qa|{IID}|1", action_id=blocks.SUBMIT_ACTION_ID,
        inputs=inputs(f"q|{IID}|1", FILLED), trigger_id=ws.issue_trigger(ALICE), response_url="http://h/1",
    )  # fmt: skip
    assert check_block_actions(payload) == []
    body = ss.payload_body(payload)
    signed(body, ss.FORM)
    assert json.loads(dict(parse_qsl(body.decode()))["payload"]) == payload
    values = payload["state"]["values"]
    assert values[f"q|{IID}|1|description"]["answer"] == {"type": "plain_text_input", "value": FILLED["description"]}
    assert values[f"q|{IID}|1|severity"]["answer"] == {
        "type": "static_select",
        "selected_option": {"text": {"type": "plain_text", "text": "High", "emoji": True}, "value": "sev2"},
    }
    assert [o["value"] for o in values[f"q|{IID}|1|components"]["answer"]["selected_options"]] == ["Login", "Web app"]
    assert values[f"q|{IID}|1|due"]["answer"] == {"type": "datepicker", "selected_date": "2026-12-01"}
    container = payload["container"]
    assert container == {
        "type": "message", "message_ts": question.message["ts"], "channel_id": "C0GENERAL", "is_ephemeral": False,
        "thread_ts": question.message["thread_ts"],
    }  # fmt: skip
    action = payload["actions"][0]
    assert (action["type"], action["value"], action["style"]) == ("button", IID, "primary")
    answers = {a.id: a.value for a in parse_state_values(REQUEST, IID, values)}
    assert answers == FILLED


def test_the_checkers_notice_drift_from_the_documented_shapes(ws: Workspace, question: ss.MessageSurface) -> None:
    payload = ss.block_actions(
        ws, "tok", user=ALICE, surface=question, block_id=f"qa|{IID}|1", action_id=blocks.SUBMIT_ACTION_ID,
        inputs=inputs(f"q|{IID}|1", FILLED), trigger_id=ws.issue_trigger(ALICE),
    )  # fmt: skip
    drifted = json.loads(json.dumps(payload))
    severity = drifted["state"]["values"][f"q|{IID}|1|severity"]["answer"]
    severity["selected_option"]["text"] = "High"
    drifted["state"]["values"][f"q|{IID}|1|due"]["answer"] = {"type": "datepicker", "value": "2026-12-01"}
    del drifted["container"]["is_ephemeral"]
    del drifted["message"]
    assert check_block_actions(drifted) == [
        "block_actions.container: missing 'is_ephemeral'",
        "block_actions.container.is_ephemeral must be a bool",
        f"state.values['q|{IID}|1|severity']['answer'].selected_option.text: must be a plain_text object",
        f"state.values['q|{IID}|1|due']['answer']: datepicker needs 'selected_date'",
    ]


def test_untouched_controls_report_null_empty_or_their_initial_value(
    ws: Workspace, question: ss.MessageSurface
) -> None:
    payload = ss.block_actions(
        ws, "tok", user=BOB, surface=question, block_id=f"qa|{IID}|1", action_id=blocks.SUBMIT_ACTION_ID,
        inputs={f"q|{IID}|1|description": {"answer": ""}}, trigger_id=ws.issue_trigger(BOB),
    )  # fmt: skip
    assert check_block_actions(payload) == []
    values = {k.split("|")[-1]: v["answer"] for k, v in payload["state"]["values"].items() if "answer" in v}
    assert values["description"] == {"type": "plain_text_input", "value": None}
    assert values["severity"] == {"type": "static_select", "selected_option": None}
    assert values["affected"]["selected_option"]["value"] == "All users"  # the question's default
    assert values["components"] == {"type": "multi_static_select", "selected_options": []}
    assert values["due"] == {"type": "datepicker", "selected_date": None}
    assert payload["user"] == {"id": BOB, "username": "bob", "name": "bob", "team_id": ws.team_id}


def test_a_click_in_an_ephemeral_message_is_not_echoed(ws: Workspace) -> None:
    ts = ws.post_ephemeral("C0GENERAL", ALICE, "failed", blocks.failed_blocks("boom", "r1", show_retry=True))
    message = ws.ephemerals(ALICE)[0]
    assert message["ts"] == ts
    surface = ss.MessageSurface("C0GENERAL", message, ephemeral=True)
    retry = next(b for b in surface_blocks(surface) if b["type"] == "actions")
    payload = ss.block_actions(
        ws, "tok", user=ALICE, surface=surface, block_id=retry["block_id"],
        action_id=blocks.ADMIN_RETRY_ACTION_ID, trigger_id=ws.issue_trigger(ALICE),
    )  # fmt: skip
    assert check_block_actions(payload) == []
    assert payload["container"]["is_ephemeral"] is True and "message" not in payload
    assert payload["actions"][0]["value"] == "r1"


def surface_blocks(surface: ss.MessageSurface | ss.ViewSurface) -> list[dict[str, Any]]:
    source = surface.message if isinstance(surface, ss.MessageSurface) else surface.view
    return ss.with_ids(source.get("blocks"))


def test_form_submission_is_a_view_submission_with_the_modal_state(ws: Workspace) -> None:
    view = ws.open_view(ALICE, blocks.modal_view(REQUEST, IID))
    payload = ss.view_submission(
        ws, "tok", user=ALICE, view=view, inputs=inputs(f"f|{IID}", FILLED), trigger_id=ws.issue_trigger(ALICE)
    )
    assert check_view_submission(payload) == []
    signed(ss.payload_body(payload), ss.FORM)
    assert (payload["view"]["callback_id"], payload["view"]["private_metadata"]) == (blocks.FORM_CALLBACK_ID, IID)
    answers = {a.id: a.value for a in parse_state_values(REQUEST, IID, payload["view"]["state"]["values"], prefix="f")}
    assert answers == FILLED


def test_home_button_click_names_the_view(ws: Workspace) -> None:
    run = RunSummary(
        run_id="r1", agent="ticket", status="paused", text="x", started_by=ALICE, updated_at=0, assignees=(ALICE,)
    )
    admin = {"counts": {"paused": 1}, "runs": [run], "page": 0, "has_next": False}
    home = ws.publish_home(ALICE, blocks.home_view(waiting=[], admin=admin))
    assert isinstance(home, dict)
    surface = ss.ViewSurface(home)
    payload = ss.block_actions(
        ws, "tok", user=ALICE, surface=surface, block_id="hra|r1", action_id=blocks.ADMIN_REMIND_ACTION_ID,
        trigger_id=ws.issue_trigger(ALICE),
    )  # fmt: skip
    assert check_block_actions(payload) == []
    assert payload["container"] == {"type": "view", "view_id": home["id"]}
    assert payload["view"]["type"] == "home" and "channel" not in payload and "message" not in payload


def test_type_ahead_sends_block_suggestion_and_keeps_the_picked_option(ws: Workspace) -> None:
    big = blocks.question_blocks(REQUEST, IID, assignees=[ALICE], external_threshold=0)
    surface = ss.MessageSurface("C0GENERAL", ws.post_message("C0GENERAL", "Question", big))
    payload = ss.block_suggestion(
        ws, "tok", user=ALICE, surface=surface, block_id=f"q|{IID}|1|severity", action_id="answer", value="hi"
    )
    assert check_block_suggestion(payload) == []
    assert (payload["value"], payload["message"]["ts"]) == ("hi", surface.message["ts"])
    picked = {"text": {"type": "plain_text", "text": "High"}, "value": "sev2"}
    click = ss.block_actions(
        ws, "tok", user=ALICE, surface=surface, block_id=f"qa|{IID}|1", action_id=blocks.SUBMIT_ACTION_ID,
        inputs={f"q|{IID}|1|severity": {"answer": picked}, f"q|{IID}|1|components": {"answer": [picked]}},
        trigger_id=ws.issue_trigger(ALICE),
    )  # fmt: skip
    assert check_block_actions(click) == []
    severity = click["state"]["values"][f"q|{IID}|1|severity"]["answer"]
    assert severity["type"] == "external_select" and severity["selected_option"]["value"] == "sev2"
    assert click["state"]["values"][f"q|{IID}|1|components"]["answer"]["type"] == "multi_external_select"


def test_thread_reply_and_home_opened_are_event_callbacks(ws: Workspace, question: ss.MessageSurface) -> None:
    reply = ws.post_message("C0GENERAL", "the second one", user=BOB, thread_ts=question.message["thread_ts"])
    envelope = ss.event_callback(ws, "tok", ss.message_event(ws, reply, "C0GENERAL"))
    assert check_event_callback(envelope) == [] and check_message_event(envelope["event"], reply=True) == []
    assert envelope["event"]["thread_ts"] == question.message["thread_ts"]
    signed(json.dumps(envelope).encode(), ss.JSON)
    opened = ss.event_callback(ws, "tok", ss.app_home_opened_event(ws, ALICE))
    assert check_event_callback(opened) == [] and check_app_home_opened(opened["event"]) == []
    ws.publish_home(ALICE, {"type": "home", "blocks": [{"type": "divider"}]})
    again = ss.app_home_opened_event(ws, ALICE)
    assert check_app_home_opened(again) == [] and again["view"]["type"] == "home"


def test_missing_ids_are_filled_in_like_slack_and_stay_stable() -> None:
    raw = [{"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Go"}}]}]
    first, second = ss.with_ids(raw), ss.with_ids(raw)
    assert first == second and first[0]["block_id"] and first[0]["elements"][0]["action_id"]
    assert "block_id" not in raw[0]


@pytest.fixture
def bolt(ws: Workspace) -> Iterator[tuple[App, list[str]]]:
    """A bolt app that verifies signatures, with one listener per kind of request the playground sends."""
    with LoopbackServer(make_webapi_app(ws)) as server:
        client = WebClient(token="xoxb-test", base_url=server.url + "/api/")
        # process_before_response, as Parley's app runs: each listener has run when dispatch returns
        # (otherwise bolt runs event listeners on its own threads after the ack, and `seen` races them).
        app = App(signing_secret=SECRET, client=client, token_verification_enabled=False, process_before_response=True)
        seen: list[str] = []
        app.command("/parley")(lambda ack: (seen.append("command"), ack(text="hi")))
        app.action(blocks.SUBMIT_ACTION_ID)(lambda ack: (seen.append("action"), ack()))
        app.view(blocks.FORM_CALLBACK_ID)(lambda ack: (seen.append("view"), ack()))
        app.options("answer")(lambda ack: (seen.append("options"), ack(options=[])))
        app.event("message")(lambda ack: (seen.append("message"), ack()))
        app.event("app_home_opened")(lambda ack: (seen.append("home"), ack()))
        yield app, seen


def test_bolt_accepts_every_kind_of_request(
    ws: Workspace, question: ss.MessageSurface, bolt: tuple[App, list[str]]
) -> None:
    app, seen = bolt
    sender = ss.SlackSender("http://unused", SECRET)
    view = ws.open_view(ALICE, blocks.modal_view(REQUEST, IID))
    reply = ws.post_message("C0GENERAL", "2", user=ALICE, thread_ts=question.message["thread_ts"])
    trigger = ws.issue_trigger(ALICE)
    requests = [
        (ss.form_body(ss.slash_command(ws, sender.token, user=ALICE, channel="C0GENERAL", command="/parley",
                                       text="help", trigger_id=trigger, response_url="http://h/2")), ss.FORM),
        (ss.payload_body(ss.block_actions(ws, sender.token, user=ALICE, surface=question, block_id=f"qa|{IID}|1",
                                          action_id=blocks.SUBMIT_ACTION_ID, trigger_id=trigger)), ss.FORM),
        (ss.payload_body(ss.view_submission(ws, sender.token, user=ALICE, view=view, inputs=None,
                                            trigger_id=trigger)), ss.FORM),
        (ss.payload_body(ss.block_suggestion(ws, sender.token, user=ALICE, surface=question,
                                             block_id=f"q|{IID}|1|severity", action_id="answer", value="")), ss.FORM),
        (json.dumps(ss.event_callback(ws, sender.token, ss.message_event(ws, reply, "C0GENERAL"))).encode(), ss.JSON),
        (json.dumps(ss.event_callback(ws, sender.token, ss.app_home_opened_event(ws, ALICE))).encode(), ss.JSON),
    ]  # fmt: skip
    for body, content_type in requests:
        response = app.dispatch(BoltRequest(body=body.decode(), headers=signed(body, content_type)))
        assert response.status == 200, (body[:80], response.body)
        tampered = ss.signed_headers("wrong-secret", body, content_type)
        assert app.dispatch(BoltRequest(body=body.decode(), headers=tampered)).status == 401
        forged = body.replace(ALICE.encode(), BOB.encode())  # signed for Alice, sent as Bob
        assert forged != body
        headers = ss.signed_headers(SECRET, body, content_type)
        assert app.dispatch(BoltRequest(body=forged.decode(), headers=headers)).status == 401
    assert seen == ["command", "action", "view", "options", "message", "home"]


def test_picking_someone_in_reassign_sends_a_users_select_action(ws: Workspace, question: ss.MessageSurface) -> None:
    payload = ss.block_actions(
        ws, "tok", user=ALICE, surface=question, block_id=f"qr|{IID}|1", action_id=blocks.REASSIGN_ACTION_ID,
        value="U0CAROL", inputs={f"qr|{IID}|1": {blocks.REASSIGN_ACTION_ID: "U0CAROL"}},
        trigger_id=ws.issue_trigger(ALICE), response_url="http://h/1",
    )  # fmt: skip
    assert check_block_actions(payload) == []
    action = payload["actions"][0]
    assert (action["type"], action["action_id"], action["selected_user"]) == (
        "users_select", "parley_reassign", "U0CAROL"
    )  # fmt: skip
    selected = payload["state"]["values"][f"qr|{IID}|1"][blocks.REASSIGN_ACTION_ID]
    assert selected == {"type": "users_select", "selected_user": "U0CAROL"}
