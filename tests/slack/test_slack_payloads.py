"""The Slack payload builders the tests use, checked against Slack's own tooling (no processes).

Slack's worked signing example must come out of `slack_signature`; every body the builders
make must pass slack_sdk's `SignatureVerifier` (and fail it once tampered with, re-signed
under another secret, or too old); bolt must read each one as the kind of request it was
built to be; and `form_state` must report inputs the way Slack reports them.
"""

from __future__ import annotations

import time

import pytest
from slack_bolt.request import BoltRequest
from slack_bolt.request.payload_utils import (
    is_app_home_opened_event,
    is_block_actions,
    is_block_suggestion,
    is_event,
    is_slash_command,
    is_view_submission,
)
from slack_forms import Tampered, button_action, find_element, form_state
from slack_payloads import (
    FORM,
    JSON_TYPE,
    SIGNING_SECRET,
    app_home_opened_event,
    block_actions_payload,
    block_suggestion_payload,
    event_callback_body,
    interaction_body,
    signed_headers,
    slack_signature,
    slash_command_body,
    view_submission_payload,
)
from slack_sdk.models.views import ViewState
from slack_sdk.signature import SignatureVerifier

pytestmark = pytest.mark.unit

# The worked example on Slack's "Verifying requests from Slack" page.
DOCS_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
DOCS_TIMESTAMP = "1531420618"
DOCS_BODY = (
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
    "&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
    "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
DOCS_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

QUESTION = {
    "ts": "1700000000.000200",
    "thread_ts": "1700000000.000100",
    "type": "message",
    "text": "Question: Pick a colour",
    "blocks": [
        {
            "type": "input",
            "block_id": "q|qTOKEN|1|colour",
            "label": {"type": "plain_text", "text": "Colour"},
            "element": {
                "type": "static_select",
                "action_id": "answer",
                "options": [{"text": {"type": "plain_text", "text": "Red"}, "value": "Red"}],
            },
        },
        {
            "type": "input",
            "block_id": "q|qTOKEN|1|when",
            "label": {"type": "plain_text", "text": "When"},
            "element": {"type": "datepicker", "action_id": "answer"},
        },
        {
            "type": "actions",
            "block_id": "qa|qTOKEN|1",
            "elements": [
                {
                    "type": "button",
                    "action_id": "parley_submit",
                    "value": "qTOKEN",
                    "text": {"type": "plain_text", "text": "Submit"},
                }
            ],
        },
    ],
}


def test_requests_are_signed_the_way_slack_signs_them() -> None:
    assert slack_signature(DOCS_BODY, DOCS_TIMESTAMP, DOCS_SECRET) == DOCS_SIGNATURE
    verifier = SignatureVerifier(SIGNING_SECRET)
    block, button = find_element(QUESTION["blocks"], "parley_submit")
    state = form_state(QUESTION["blocks"], {"Colour": "Red", "When": "2026-01-31"})
    clicked = block_actions_payload(
        user="U0BOB", message=QUESTION, channel="C0GENERAL", action=button_action(block, button), state_values=state
    )
    bodies = {
        "slash": (slash_command_body("ticket Login & SSO broken", user="U0BOB"), FORM),
        "block_actions": (interaction_body(clicked), FORM),
        "view_submission": (
            interaction_body(
                view_submission_payload(
                    user="U0BOB",
                    view={"id": "V1", "type": "modal", "callback_id": "parley_form", "blocks": []},
                    state_values=state,
                )
            ),
            FORM,
        ),
        "block_suggestion": (
            interaction_body(
                block_suggestion_payload(
                    user="U0BOB",
                    message=QUESTION,
                    channel="C0GENERAL",
                    block_id="q|qTOKEN|1|colour",
                    action_id="answer",
                    value="re",
                )
            ),
            FORM,
        ),
        "event": (event_callback_body(app_home_opened_event("U0BOB")), JSON_TYPE),
    }
    for name, (body, content_type) in bodies.items():
        headers = signed_headers(body, content_type)
        assert verifier.is_valid_request(body, headers), name
        assert not verifier.is_valid_request(body + " ", headers), name
        assert not verifier.is_valid_request(body, signed_headers(body, content_type, secret="other")), name
        stale = signed_headers(body, content_type, timestamp=int(time.time()) - 6 * 60)
        assert not verifier.is_valid_request(body, stale), name

    # Bolt reads each body as the kind of request it was built to be.
    parsed = {
        name: BoltRequest(body=body, headers=signed_headers(body, ct)).body for name, (body, ct) in bodies.items()
    }
    assert is_slash_command(parsed["slash"]) and parsed["slash"]["text"] == "ticket Login & SSO broken"
    assert is_block_actions(parsed["block_actions"]) and is_view_submission(parsed["view_submission"])
    assert is_block_suggestion(parsed["block_suggestion"])
    assert is_event(parsed["event"]) and is_app_home_opened_event(parsed["event"])
    # state.values has the layout slack_sdk's own model reads.
    values = ViewState(**parsed["block_actions"]["state"]).values
    assert values["q|qTOKEN|1|colour"]["answer"].type == "static_select"
    assert values["q|qTOKEN|1|colour"]["answer"].selected_option["value"] == "Red"
    assert values["q|qTOKEN|1|when"]["answer"].selected_date == "2026-01-31"


def test_untouched_inputs_are_reported_as_slack_reports_them() -> None:
    state = form_state(QUESTION["blocks"], {})
    assert state == {
        "q|qTOKEN|1|colour": {"answer": {"type": "static_select", "selected_option": None}},
        "q|qTOKEN|1|when": {"answer": {"type": "datepicker", "selected_date": None}},
    }
    assert form_state(QUESTION["blocks"], {}, omit_untouched=True) == {}
    tampered = form_state(QUESTION["blocks"], {"Colour": Tampered("Purple")})
    assert tampered["q|qTOKEN|1|colour"]["answer"]["selected_option"]["value"] == "Purple"
    with pytest.raises(LookupError):
        form_state(QUESTION["blocks"], {"Colour": "Purple"})  # a person can only pick what is offered
