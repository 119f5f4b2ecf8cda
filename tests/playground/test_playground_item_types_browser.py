"""The playground draws the new items' elements as Slack does, and sends exactly what Slack sends.

Number, email and URL inputs (modal-only), Yes/No radio buttons, the one checkbox of an
optional yes/no, the time picker and the date-and-time picker: each filled in Chromium and
checked down to the ``state.values`` of the payload the stub bot receives.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import ARTIFACTS, browser_page, require_chromium
from playground_stub import SECRET, StubBot

from bot.playground import LoopbackServer, Workspace
from bot.playground.app import create_playground_app
from bot.slack import blocks
from workers.interaction import Item, Request

pytestmark = [pytest.mark.system, pytest.mark.browser]

IID = "qTypedItems01"
ALICE = "U0ALICE"
REQUEST = Request(
    reason="Deploy checkout",
    items=[
        Item(id="replicas", text="Replicas", type="number", min=1, max=10, integer=True, default=3),
        Item(id="go", text="Go ahead?", type="boolean"),
        Item(id="notify", text="Notify?", type="boolean", required=False),
        Item(id="contact", text="Contact", type="email"),
        Item(id="runbook", text="Runbook", type="url", required=False),
        Item(id="at", text="At", type="time", required=False),
        Item(id="start", text="Start", type="datetime", required=False, default="2026-12-04T17:30:00Z"),
    ],
)
YES = {"text": {"type": "plain_text", "text": "Yes", "emoji": True}, "value": "true"}
NO = {"text": {"type": "plain_text", "text": "No", "emoji": True}, "value": "false"}


def respond(body: dict[str, Any]) -> tuple[int, Any]:
    """A form whose Replicas is over 10 gets that field's error, as Parley answers it; else a bare ack."""
    if body.get("type") == "view_submission":
        replicas = body["view"]["state"]["values"][f"f|{IID}|replicas"]["answer"]["value"]
        if replicas and float(replicas) > 10:
            return 200, {"response_action": "errors", "errors": {f"f|{IID}|replicas": "at most 10"}}
    return 200, ""


@pytest.fixture
def setup() -> Iterator[tuple[Any, Workspace, StubBot]]:
    require_chromium()
    ws, stub = Workspace(), StubBot(responder=respond)
    with LoopbackServer(stub.app()) as bot:
        app = create_playground_app(ws, bot_url=bot.url + "/slack/events", signing_secret=SECRET)
        with LoopbackServer(app) as server, browser_page(server.url, "playground-typed-last.png") as page:
            yield page, ws, stub


def _field(surface: Any, label: str) -> Any:
    return surface.get_by_test_id("input-block").filter(has_text=label)


def test_the_form_draws_number_email_url_and_pickers_and_sends_them_as_slack_does(
    setup: tuple[Any, Workspace, StubBot],
) -> None:
    from playwright.sync_api import expect

    page, ws, stub = setup
    ws.open_view(ALICE, blocks.modal_view(REQUEST, IID))
    modal = page.get_by_test_id("modal")

    replicas = _field(modal, "Replicas").get_by_test_id("number_input")
    expect(replicas).to_have_attribute("type", "number")
    expect(replicas).to_have_attribute("step", "1")
    expect(replicas).to_have_attribute("min", "1")
    expect(replicas).to_have_attribute("max", "10")
    expect(replicas).to_have_value("3")
    expect(_field(modal, "Replicas")).to_contain_text("A whole number from 1 to 10")
    expect(_field(modal, "Contact").get_by_test_id("email_text_input")).to_have_attribute("type", "email")
    expect(_field(modal, "Runbook").get_by_test_id("url_text_input")).to_have_attribute("type", "url")
    go = _field(modal, "Go ahead?").get_by_test_id("radio_buttons")
    expect(go.locator("label")).to_have_text(["Yes", "No"])
    expect(_field(modal, "Notify?").get_by_test_id("checkboxes").locator("input[type=checkbox]")).to_have_count(1)
    start = _field(modal, "Start").get_by_test_id("datetimepicker")
    # The initial moment is shown in the browser's time zone, and reads back as the same instant.
    assert page.evaluate("(v) => new Date(v).getTime() / 1000", start.input_value()) == 1796405400

    replicas.fill("12")
    go.get_by_text("No").click()
    _field(modal, "Notify?").get_by_text("Yes").click()
    _field(modal, "Contact").locator("input").fill("ops@example.com")
    _field(modal, "Runbook").locator("input").fill("https://example.com/runbook")
    _field(modal, "At").get_by_test_id("timepicker").fill("09:30")
    start.fill("2027-01-02T08:15")
    picked = page.evaluate("new Date('2027-01-02T08:15').getTime() / 1000")
    modal.get_by_test_id("modal-submit").click()
    expect(_field(modal, "Replicas").get_by_test_id("input-error")).to_have_text("at most 10")

    replicas.fill("4")
    modal.get_by_test_id("modal-submit").click()
    expect(modal).to_have_count(0)
    values = stub.received[-1]["view"]["state"]["values"]
    assert {k.split("|")[-1]: v["answer"] for k, v in values.items() if k.startswith("f|")} == {
        "replicas": {"type": "number_input", "value": "4"},
        "go": {"type": "radio_buttons", "selected_option": NO},
        "notify": {"type": "checkboxes", "selected_options": [YES]},
        "contact": {"type": "email_text_input", "value": "ops@example.com"},
        "runbook": {"type": "url_text_input", "value": "https://example.com/runbook"},
        "at": {"type": "timepicker", "selected_time": "09:30"},
        "start": {"type": "datetimepicker", "selected_date_time": int(picked)},
    }
    page.screenshot(path=str(ARTIFACTS / "playground-typed-form.png"))


def test_the_message_draws_text_inputs_radio_buttons_and_pickers(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, stub = setup
    posted = ws.post_message("C0GENERAL", "Question", blocks.question_blocks(REQUEST, IID, assignees=[ALICE]))
    message = page.get_by_test_id("main-pane").locator(f'[data-testid="message"][data-ts="{posted["ts"]}"]')
    expect(_field(message, "Replicas").get_by_test_id("plain_text_input")).to_have_value("3")
    expect(_field(message, "Contact").get_by_test_id("plain_text_input")).to_have_attribute(
        "placeholder", "name@example.com"
    )
    expect(message.get_by_test_id("number_input")).to_have_count(0)
    _field(message, "Replicas").locator("input").fill("5")
    _field(message, "Go ahead?").get_by_text("Yes").click()
    _field(message, "Contact").locator("input").fill("ops@example.com")
    _field(message, "At").get_by_test_id("timepicker").fill("23:05")
    _field(message, "Start").get_by_test_id("datetimepicker").fill("")
    with page.expect_response("**/ui/action"):
        message.get_by_test_id("button-parley_submit").click()
    values = stub.last()["state"]["values"]
    assert {k.split("|")[-1]: v["answer"] for k, v in values.items() if k.startswith("q|")} == {
        "replicas": {"type": "plain_text_input", "value": "5"},
        "go": {"type": "radio_buttons", "selected_option": YES},
        "notify": {"type": "checkboxes", "selected_options": []},
        "contact": {"type": "plain_text_input", "value": "ops@example.com"},
        "runbook": {"type": "plain_text_input", "value": None},
        "at": {"type": "timepicker", "selected_time": "23:05"},
        "start": {"type": "datetimepicker", "selected_date_time": None},
    }


def test_the_stand_in_refuses_a_modal_only_element_in_a_message(setup: tuple[Any, Workspace, StubBot]) -> None:
    from bot.playground.webapi import validate_blocks

    form = blocks.modal_view(REQUEST, IID)["blocks"]
    assert validate_blocks(form, 100, "/view/blocks", surface="modal") == []
    problems = validate_blocks(form)
    assert any("'number_input' is only allowed in modals" in p for p in problems), problems
    assert validate_blocks(blocks.question_blocks(REQUEST, IID, assignees=[ALICE])) == []
