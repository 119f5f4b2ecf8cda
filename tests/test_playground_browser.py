"""The playground page's Block Kit rendering, in Chromium, against a stub bot.

What `parley dev`'s end-to-end test cannot reach with the shipped agents: mrkdwn rendered
as text (never as HTML), external-select type-ahead, a modal's server-side errors, and
confirmation dialogs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import browser_page, require_chromium
from playground_stub import SECRET, StubBot

from bot.playground import LoopbackServer, Workspace
from bot.playground.app import create_playground_app
from bot.slack import blocks
from workers.agents.ticket import SEVERITIES, details_request
from workers.runtime.admin import RunSummary

pytestmark = [pytest.mark.system, pytest.mark.browser]

IID = "qBrowserPage01"
ALICE = "U0ALICE"
HOSTILE = (
    "*bold* _italic_ ~gone~ `x < y` <@U0BOB> <!here> <!date^1700000000^{date_num}|Nov 14> "
    "<https://example.com/a?b=1&amp;c=2|a link> <javascript:alert(1)|bad link> "
    "&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(2)&gt; :white_check_mark:\n> quoted"
)


def respond(body: dict[str, Any]) -> tuple[int, Any]:
    """Options that match the typed text for a type-ahead; an error for a short form answer; else a bare ack."""
    if body.get("type") == "block_suggestion":
        query = body["value"].casefold()
        matches = [o for o in SEVERITIES if query in o.label.casefold()]
        return 200, {"options": [{"text": {"type": "plain_text", "text": o.label}, "value": o.value} for o in matches]}
    if body.get("type") == "view_submission":
        value = body["view"]["state"]["values"][f"f|{IID}|description"]["answer"]["value"]
        if len(value or "") < 10:
            return 200, {"response_action": "errors", "errors": {f"f|{IID}|description": "Say a bit more, please."}}
    return 200, ""


@pytest.fixture
def setup() -> Iterator[tuple[Any, Workspace, StubBot]]:
    require_chromium()
    ws, stub = Workspace(), StubBot(responder=respond)
    with LoopbackServer(stub.app()) as bot:
        app = create_playground_app(ws, bot_url=bot.url + "/slack/events", signing_secret=SECRET)
        with LoopbackServer(app) as server, browser_page(server.url, "playground-page-last.png") as page:
            yield page, ws, stub


def test_mrkdwn_is_rendered_as_text_never_as_html(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, _ = setup
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    ws.post_message("C0GENERAL", HOSTILE, [{"type": "section", "text": {"type": "mrkdwn", "text": HOSTILE}}])
    body = page.get_by_test_id("message").locator(".body")
    expect(body).to_contain_text("<script>alert(1)</script>")
    expect(body).to_contain_text("<img src=x onerror=alert(2)>")
    assert body.locator("script, img, iframe").count() == 0
    assert (body.locator("strong").inner_text(), body.locator("em").inner_text()) == ("bold", "italic")
    assert body.locator("del").inner_text() == "gone" and body.locator("code").inner_text() == "x < y"
    assert body.locator(".mention").all_inner_texts() == ["@bob", "@here"]
    expect(body.locator(".date")).to_have_text("2023-11-14")
    link = body.get_by_role("link", name="a link")
    assert link.get_attribute("href") == "https://example.com/a?b=1&c=2"
    assert body.get_by_role("link").count() == 1  # javascript: is shown as text, not linked
    expect(body).to_contain_text("bad link")
    expect(body).to_contain_text("✅")
    expect(body.locator(".quote")).to_have_text("quoted")
    assert dialogs == []


def test_type_ahead_errors_in_the_modal_and_confirmations(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, stub = setup
    request = details_request("Typeahead")
    question = blocks.question_blocks(request, IID, assignees=[ALICE], external_threshold=3)
    posted = ws.post_message("C0GENERAL", "Question", question)
    message = page.get_by_test_id("main-pane").locator(f'[data-testid="message"][data-ts="{posted["ts"]}"]')
    severity = message.get_by_test_id("input-block").filter(has_text="Severity")
    typeahead = severity.get_by_test_id("external_select-input")
    typeahead.click()
    typeahead.press_sequentially("hi")
    expect(severity.get_by_test_id("suggestion")).to_have_text(["High"])
    severity.get_by_test_id("suggestion").click()
    expect(severity.get_by_test_id("chip")).to_contain_text("High")
    with page.expect_response("**/ui/action"):
        message.get_by_test_id("button-parley_submit").click()
    *typed, click = stub.received
    assert [(t["type"], t["value"]) for t in typed][-1] == ("block_suggestion", "hi")
    picked = click["state"]["values"][f"q|{IID}|1|severity"]["answer"]
    assert picked == {
        "type": "external_select",
        "selected_option": {"text": {"type": "plain_text", "text": "High", "emoji": True}, "value": "sev2"},
    }

    ws.open_view(ALICE, blocks.modal_view(request, IID))
    modal = page.get_by_test_id("modal")
    description = modal.get_by_test_id("input-block").filter(has_text="Describe the bug")
    description.locator("textarea").fill("short")
    modal.get_by_test_id("input-block").filter(has_text="Severity").locator("select").select_option("sev3")
    modal.get_by_test_id("input-block").filter(has_text="Components").locator("select").select_option(["API"])
    modal.get_by_test_id("modal-submit").click()
    expect(description.get_by_test_id("input-error")).to_have_text("Say a bit more, please.")
    description.locator("textarea").fill("Long enough this time.")
    modal.get_by_test_id("modal-submit").click()
    expect(modal).to_have_count(0)
    assert stub.received[-1]["type"] == "view_submission" and ws.open_views(ALICE) == []

    run = RunSummary(run_id="r1", agent="ticket", status="paused", text="x", started_by=ALICE, updated_at=0)
    admin = {"counts": {"paused": 1}, "runs": [run], "page": 0, "has_next": False}
    ws.publish_home(ALICE, blocks.home_view(waiting=[], admin=admin))
    with page.expect_response("**/ui/home"):
        page.get_by_test_id("nav-home").click()
    assert stub.last()["event"]["type"] == "app_home_opened"
    cancel = page.get_by_test_id("home-view").get_by_test_id("button-parley_admin_cancel")
    expect(cancel).to_be_visible()
    before = len(stub.received)
    cancel.click()
    page.get_by_test_id("confirm-dialog").get_by_test_id("confirm-deny").click()
    expect(page.get_by_test_id("confirm-dialog")).to_have_count(0)
    assert len(stub.received) == before  # denied: nothing sent
    cancel.click()
    expect(page.get_by_test_id("confirm-dialog")).to_contain_text("Cancel this run?")
    with page.expect_response("**/ui/action"):
        page.get_by_test_id("confirm-ok").click()
    expect(page.get_by_test_id("confirm-dialog")).to_have_count(0)
    last = stub.last()
    assert last["type"] == "block_actions" and last["actions"][0]["action_id"] == "parley_admin_cancel"
    assert last["container"]["type"] == "view"


def test_direct_messages_show_in_the_app_homes_messages_tab(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, _ = setup
    page.get_by_test_id("nav-home").click()
    expect(page.get_by_test_id("messages-tab")).to_have_count(0)
    ws.post_message(ws.resolve_channel(ALICE) or "", "Done: cancel run `r1`.")
    page.get_by_test_id("messages-tab").click()
    expect(page.get_by_test_id("main-pane").get_by_test_id("message")).to_contain_text("Done: cancel run r1.")
    page.get_by_test_id("user-switcher").select_option("U0BOB")
    expect(page.get_by_test_id("messages-tab")).to_have_count(0)
