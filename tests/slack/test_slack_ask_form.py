"""`run.ask_form` through Slack's wire formats: a pydantic model asked as a form, its validators the form's.

The `s-window` agent (tests/slack_agents.py) asks for a `Window` on real RQ workers; the form is
opened and submitted with signed payloads against the Web API stand-in. The model's own
validator refuses an end before the start as the form's error on that field, and nothing is
accepted; a right answer comes back to the agent as a `Window`.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import SlackStack

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1)]

USER = "U0BOB"


def test_ask_form_returns_the_model_and_its_validator_errors_are_the_forms(stack: SlackStack) -> None:
    run = stack.start_run("s-window", f"window-{secrets.token_hex(4)}")
    question = stack.question(run, 1)
    labels = [b["label"]["text"] for b in question["blocks"] if b["type"] == "input"]
    assert labels == ["Team", "Note", "Starts", "Ends"]

    block, button = find_element(question["blocks"], "parley_open_form")
    mark = stack.mark()
    click = block_actions_payload(
        user=USER,
        message=question,
        channel=run.channel,
        action=button_action(block, button),
        trigger=stack.ws.issue_trigger(USER),
    )
    assert stack.interact(click).status_code == 200
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark, what="the form to open")
    view: dict[str, Any] = stack.ws.open_views(USER)[-1]
    iid = view["private_metadata"].split("|")[0]

    def submit(fills: dict[str, Any]) -> Any:
        payload = view_submission_payload(user=USER, view=view, state_values=form_state(view["blocks"], fills))
        return stack.interact(payload)

    wrong = submit({"Team": "core", "Note": "db upgrade", "Starts": "23:00", "Ends": "22:00"})
    assert wrong.status_code == 200
    assert wrong.json() == {
        "response_action": "errors",
        "errors": {f"f|{iid}|ends": "the window must end after it starts"},
    }
    assert stack.status(run.run_id) == "paused"  # nothing was accepted

    right = submit({"Team": "web", "Note": "db upgrade", "Starts": "22:00", "Ends": "23:30"})
    assert right.status_code == 200 and right.text == ""
    reply = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), "the run to finish")
    assert reply["text"] == ":white_check_mark: Done: window for web: 22:00-23:30 (db upgrade)"
