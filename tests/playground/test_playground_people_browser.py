"""The playground shows issue 54's surfaces as Slack would, in Chromium, against a stub bot.

The messages and the Home tab are built by Parley's own builders, then drawn by the page:
App Home's "Set away…" (and, once away, the line and "I'm back"), a question's "Claim",
a last call's date, and the Confirm step of a reply read in plain words. Each button sends
the `block_actions` Parley's listeners take.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import browser_page, require_chromium
from playground_stub import SECRET, StubBot

from bot.playground import LoopbackServer, Workspace
from bot.playground.app import create_playground_app
from bot.slack import blocks
from bot.slack.blocks_away import AWAY_BACK_ACTION_ID, AWAY_OPEN_ACTION_ID
from bot.slack.mrkdwn import date_token
from bot.slack.reply_reading import CONFIRM_ACTION_ID, Reply, proposal_blocks
from workers.interaction import Answer, Item, ItemType, Request
from workers.store.away import Away
from workers.store.records import InterruptRecord, InterruptState

pytestmark = [pytest.mark.system, pytest.mark.browser]

ALICE, IID = "U0ALICE", "qPeoplePage01"
REQUEST = Request(
    reason="Pick a colour",
    items=[Item(id="colour", text="Colour", type=ItemType.SELECT, options=["Red", "Green"])],
    claim=True,
)


@pytest.fixture
def setup() -> Iterator[tuple[Any, Workspace, StubBot]]:
    require_chromium()
    ws, stub = Workspace(), StubBot(responder=lambda body: (200, ""))
    with LoopbackServer(stub.app()) as bot:
        app = create_playground_app(ws, bot_url=bot.url + "/slack/events", signing_secret=SECRET)
        with LoopbackServer(app) as server, browser_page(server.url, "playground-people-last.png") as page:
            yield page, ws, stub


def clicked(page: Any, stub: StubBot, button: Any) -> dict[str, Any]:
    with page.expect_response("**/ui/action"):
        button.click()
    body: dict[str, Any] = stub.last()
    return body


def test_away_on_app_home_and_claim_last_call_and_confirm_in_the_thread(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, stub = setup
    ws.publish_home(ALICE, blocks.home_view(waiting=[], admin=None, away=None))
    with page.expect_response("**/ui/home"):
        page.get_by_test_id("nav-home").click()
    home = page.get_by_test_id("home-view")
    assert clicked(page, stub, home.get_by_test_id(f"button-{AWAY_OPEN_ACTION_ID}"))["actions"][0]["action_id"] == (
        AWAY_OPEN_ACTION_ID
    )
    until = time.time() + 86400
    ws.publish_home(ALICE, blocks.home_view(waiting=[], admin=None, away=Away(ALICE, until, "U0BOB")))
    expect(home).to_contain_text("You are away until")
    expect(home).to_contain_text("new questions for you go to @bob")
    sent = clicked(page, stub, home.get_by_test_id(f"button-{AWAY_BACK_ACTION_ID}"))
    assert sent["actions"][0]["action_id"] == AWAY_BACK_ACTION_ID and sent["container"]["type"] == "view"

    page.get_by_test_id("channel-general").click()
    question = ws.post_message("C0GENERAL", "Pick a colour", blocks.question_blocks(REQUEST, IID, assignees=[]))
    message = page.get_by_test_id("main-pane").locator(f'[data-testid="message"][data-ts="{question["ts"]}"]')
    expect(message).to_contain_text("Anyone in this channel can answer")
    sent = clicked(page, stub, message.get_by_test_id("button-parley_claim"))
    assert (sent["actions"][0]["action_id"], sent["actions"][0]["value"]) == ("parley_claim", IID)

    expires = int(time.time()) + 900
    last_call = f":alarm_clock: Last call: <@{ALICE}>, the question above expires {date_token(expires)} (in 15 min)."
    called = ws.post_message("C0GENERAL", last_call)
    shown_call = page.get_by_test_id("main-pane").locator(f'[data-testid="message"][data-ts="{called["ts"]}"]')
    expect(shown_call).to_contain_text("Last call: @alice, the question above expires")
    expect(shown_call.locator(".date")).to_have_count(1)  # drawn as a date, in the reader's time zone

    interrupt = InterruptRecord(
        id=IID, run_id="r1", key="k", attempt=1, request=REQUEST, assignees=[], asked_at=0, state=InterruptState.OPEN
    )
    reply = Reply(interrupt, ALICE, "green please", "C0GENERAL", question["ts"], {})
    read = proposal_blocks(reply, [Answer(id="colour", choice="Green")], "prop1")
    proposal = ws.post_message("C0GENERAL", "Is this your answer?", read)
    shown = page.get_by_test_id("main-pane").locator(f'[data-testid="message"][data-ts="{proposal["ts"]}"]')
    expect(shown).to_contain_text("I read @alice's reply as:")
    expect(shown).to_contain_text("Colour: Green")
    sent = clicked(page, stub, shown.get_by_test_id(f"button-{CONFIRM_ACTION_ID}"))
    assert (sent["actions"][0]["action_id"], sent["actions"][0]["value"]) == (CONFIRM_ACTION_ID, "prop1")
