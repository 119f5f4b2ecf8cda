"""The playground draws streamed answers, alerts and cards, in Chromium.

slack_sdk's own `chat_stream` streams into the playground's Web API, and the page shows
each part as it arrives, then the feedback buttons the stream ends with under its text. Alerts (Parley's
failure message among them) show their level; cards show their parts, and their buttons
send `block_actions` as Slack's do. Blocks go through the stand-in, which checks them
with slack_sdk's models.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import browser_page, require_chromium
from playground_stub import SECRET, StubBot
from slack_sdk import WebClient
from slack_sdk.models.blocks import AlertBlock, ButtonElement, CardBlock, ImageElement, MarkdownTextObject

from bot.playground import LoopbackServer, Workspace
from bot.playground.app import create_playground_app
from bot.slack.blocks import ADMIN_RETRY_ACTION_ID
from bot.slack.blocks_alert import failed_alert_blocks
from bot.slack.streamed_answer import feedback_blocks

pytestmark = [pytest.mark.system, pytest.mark.browser]
CHANNEL = "C0GENERAL"


@pytest.fixture
def setup() -> Iterator[tuple[Any, Workspace, StubBot, WebClient]]:
    require_chromium()
    ws, stub = Workspace(), StubBot()
    with LoopbackServer(stub.app()) as bot:
        app = create_playground_app(ws, bot_url=bot.url + "/slack/events", signing_secret=SECRET)
        with LoopbackServer(app) as server, browser_page(server.url, "playground-streams-last.png") as page:
            yield page, ws, stub, WebClient(token="xoxb-test", base_url=server.url + "/api/")


def test_streamed_text_appears_as_its_parts_arrive(setup: tuple[Any, Workspace, StubBot, WebClient]) -> None:
    from playwright.sync_api import expect

    page, ws, _stub, web = setup
    root = ws.post_message(CHANNEL, "<@U0ALICE> started *assistant*")
    page.locator(f'[data-testid="message"][data-ts="{root["ts"]}"]').click()  # opens its thread
    thread = page.locator("#thread-pane")

    stream = web.chat_stream(
        channel=CHANNEL, thread_ts=root["ts"], recipient_team_id=ws.team_id, recipient_user_id="U0ALICE", buffer_size=1
    )
    stream.append(markdown_text="Deploying to")
    answer = thread.get_by_test_id("message").last
    expect(answer).to_contain_text("Deploying to")
    expect(answer).not_to_contain_text("staging")
    stream.append(markdown_text=" staging EU")
    expect(answer).to_contain_text("Deploying to staging EU")
    expect(answer.get_by_test_id("feedback-positive")).to_have_count(0)  # only once it ends
    stream.stop(markdown_text=", done.", blocks=feedback_blocks("rRun1"))
    expect(answer.get_by_test_id("streamed-text")).to_have_text("Deploying to staging EU, done.")  # kept above
    expect(answer.get_by_test_id("feedback-positive")).to_be_visible()
    [ts] = ws.agents.streams
    assert ws.agents.streams[ts] == ["Deploying to", " staging EU", ", done."]  # three parts, drawn in turn
    assert ws.agents.live == set()


def test_alerts_show_their_level_and_cards_their_parts_and_buttons(
    setup: tuple[Any, Workspace, StubBot, WebClient],
) -> None:
    from playwright.sync_api import expect

    page, _ws, stub, web = setup
    failed_blocks = failed_alert_blocks("the deploy is unreachable", "rRun1", show_retry=True)
    failure = web.chat_postMessage(channel=CHANNEL, text=":x: Failed: the deploy is unreachable", blocks=failed_blocks)
    notice = AlertBlock(text=MarkdownTextObject(text="Heads up: *staging* is slow"), level="warning").to_dict()
    plain = AlertBlock(text="Nothing to worry about").to_dict()  # no level: Slack's "default"
    web.chat_postMessage(channel=CHANNEL, text="Notices", blocks=[notice, plain])
    card = CardBlock(
        block_id="deploy-card",
        icon=ImageElement(image_url="https://example.com/parley.png", alt_text="Parley"),
        title="Deploy checkout",
        subtitle="Staging EU",
        body="Three replicas, then a smoke test.",
        actions=[
            ButtonElement(text="Cancel", action_id="card_cancel", value="no", style="danger"),
            ButtonElement(text="Go", action_id="card_go", value="yes", style="primary"),
        ],
    ).to_dict()
    posted = web.chat_postMessage(channel=CHANNEL, text="Deploy checkout", blocks=[card])

    failed = page.locator(f'[data-testid="message"][data-ts="{failure["ts"]}"]')
    alert = failed.get_by_test_id("block-alert")
    expect(alert).to_have_attribute("data-level", "error")
    expect(alert).to_contain_text("Failed: the deploy is unreachable")
    alerts = page.get_by_test_id("block-alert")
    expect(alerts).to_have_count(3)
    assert [alerts.nth(n).get_attribute("data-level") for n in range(3)] == ["error", "warning", "default"]
    expect(alerts.nth(1).locator("b, strong")).to_have_text("staging")  # mrkdwn is drawn
    with page.expect_response("**/ui/action"):
        failed.get_by_test_id(f"button-{ADMIN_RETRY_ACTION_ID}").click()
    [retry] = stub.last()["actions"]
    assert (retry["action_id"], retry["value"]) == (ADMIN_RETRY_ACTION_ID, "rRun1")

    drawn = page.locator(f'[data-testid="message"][data-ts="{posted["ts"]}"]').get_by_test_id("block-card")
    expect(drawn.get_by_test_id("card-title")).to_have_text("Deploy checkout")
    expect(drawn.get_by_test_id("card-subtitle")).to_have_text("Staging EU")
    expect(drawn.get_by_test_id("card-body")).to_have_text("Three replicas, then a smoke test.")
    expect(drawn.locator(".card-icon")).to_have_text("[image: Parley]")
    with page.expect_response("**/ui/action"):
        drawn.get_by_test_id("button-card_go").click()
    [go] = stub.last()["actions"]
    assert (go["block_id"], go["action_id"], go["value"]) == ("deploy-card", "card_go", "yes")
