"""The playground page's Block Kit rendering, in Chromium, against a stub bot.

What `parley dev`'s end-to-end test cannot reach with the shipped agents: mrkdwn rendered
as text (never as HTML), external-select type-ahead, a modal's server-side errors,
confirmation dialogs, the multi-select menu and the calendar down to the exact
``state.values`` they send, and rich_text blocks drawn with their styles.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from browser_support import ARTIFACTS, browser_page, require_chromium
from playground_stub import SECRET, StubBot

from bot.playground import LoopbackServer, Workspace
from bot.playground.app import create_playground_app
from bot.slack import blocks
from workers.agents.ticket import COMPONENTS, SEVERITIES, details_request
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


def pick(field: Any, *labels: str) -> None:
    """Opens the field's menu and clicks each option in turn, as a person picks from Slack's multi-select."""
    field.locator(".menu-field").click()
    for label in labels:
        field.get_by_test_id("menu-option").filter(has_text=label).first.click()


def option(label: str) -> dict[str, Any]:
    """An option as Slack echoes a static option back in ``state.values``."""
    return {"text": {"type": "plain_text", "text": label, "emoji": True}, "value": label}


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
    expect(severity.get_by_test_id("menu-option")).to_have_text(["High"])
    severity.get_by_test_id("menu-option").click()
    expect(severity.locator(".chip-label")).to_have_text(["High"])
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
    pick(modal.get_by_test_id("input-block").filter(has_text="Components"), "API")
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


def test_multi_select_menu_and_calendar_send_exactly_the_picked_answers(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, stub = setup
    question = blocks.question_blocks(details_request("Menus"), IID, assignees=[ALICE])
    posted = ws.post_message("C0GENERAL", "Question", question)
    message = page.get_by_test_id("main-pane").locator(f'[data-testid="message"][data-ts="{posted["ts"]}"]')
    components = message.get_by_test_id("input-block").filter(has_text="Components")
    assert components.locator("select").count() == 0  # a menu, not a native list box

    # The menu lists every option; picked ones become chips and leave the list, which stays open.
    expect(components.locator(".menu-input")).to_have_attribute("placeholder", "Choose options")
    components.locator(".menu-field").click()
    expect(components.get_by_test_id("menu-option")).to_have_text(COMPONENTS)
    components.get_by_test_id("menu-option").filter(has_text="Login").click()
    components.get_by_test_id("menu-option").filter(has_text="API").click()
    expect(components.locator(".chip-label")).to_have_text(["Login", "API"])
    expect(components.get_by_test_id("menu-option")).to_have_text(["Web app", "Mobile app", "Billing", "Notifications"])
    components.locator(".menu-input").press_sequentially("mob")  # typing filters; Enter picks the match
    expect(components.get_by_test_id("menu-option")).to_have_text(["Mobile app"])
    components.locator(".menu-input").press("Enter")
    components.get_by_title("Remove API").click()
    expect(components.locator(".chip-label")).to_have_text(["Login", "Mobile app"])
    expect(components.locator(".menu-input")).to_have_attribute("placeholder", "")
    components.locator(".menu-input").press("Escape")
    expect(components.get_by_test_id("menu-list")).to_be_hidden()

    # The date: a field showing the placeholder, a calendar under it, next month's 15th.
    due = message.get_by_test_id("input-block").filter(has_text="Due date")
    assert due.locator('input[type="date"]').count() == 0
    expect(due.get_by_test_id("datepicker-field")).to_have_text("Pick a date")
    due.get_by_test_id("datepicker-field").click()
    today = date.today()
    shown = date(today.year, today.month, 1)
    expect(due.get_by_test_id("calendar-month")).to_have_text(shown.strftime("%B %Y"))
    due.get_by_test_id("calendar-next").click()
    target = date(shown.year + shown.month // 12, shown.month % 12 + 1, 15)
    expect(due.get_by_test_id("calendar-month")).to_have_text(target.strftime("%B %Y"))
    due.locator(f'[data-testid="calendar-day"][data-date="{target.isoformat()}"]').click()
    expect(due.get_by_test_id("calendar")).to_be_hidden()
    expect(due.get_by_test_id("datepicker-field")).to_have_text(f"{target:%b} 15, {target.year}")
    expect(due.get_by_test_id("datepicker")).to_have_attribute("data-value", target.isoformat())

    description = message.get_by_test_id("input-block").filter(has_text="Describe the bug")
    description.locator("textarea").fill("Menus and dates.")
    with page.expect_response("**/ui/action"):
        message.get_by_test_id("button-parley_submit").click()
    values = stub.last()["state"]["values"]
    assert values[f"q|{IID}|1|components"]["answer"] == {
        "type": "multi_static_select",
        "selected_options": [option("Login"), option("Mobile app")],
    }
    assert values[f"q|{IID}|1|due"]["answer"] == {"type": "datepicker", "selected_date": target.isoformat()}
    assert values[f"q|{IID}|1|description"]["answer"] == {"type": "plain_text_input", "value": "Menus and dates."}

    # The picked date opens the calendar on its own month, marked.
    due.get_by_test_id("datepicker-field").click()
    expect(due.locator(".cal-day.selected")).to_have_attribute("data-date", target.isoformat())
    page.screenshot(path=str(ARTIFACTS / "playground-menus.png"))
    page.keyboard.press("Escape")
    expect(due.get_by_test_id("calendar")).to_be_hidden()


RICH_TEXT = {
    "type": "rich_text",
    "elements": [
        {
            "type": "rich_text_section",
            "elements": [
                {"type": "text", "text": "Deploy ", "style": {"bold": True}},
                {"type": "text", "text": "now", "style": {"italic": True, "bold": True}},
                {"type": "text", "text": " or ", "style": {}},
                {"type": "text", "text": "never", "style": {"strike": True}},
                {"type": "text", "text": ", see "},
                {"type": "text", "text": "make deploy", "style": {"code": True}},
                {"type": "text", "text": " and "},
                {"type": "link", "url": "https://example.com/runbook", "text": "the runbook"},
                {"type": "text", "text": ", "},
                {"type": "link", "url": "javascript:alert(1)", "text": "not a link"},
                {"type": "text", "text": ", ask "},
                {"type": "user", "user_id": "U0BOB"},
                {"type": "text", "text": " in "},
                {"type": "channel", "channel_id": "C0OPS"},
                {"type": "text", "text": " "},
                {"type": "emoji", "name": "thumbsup", "unicode": "1f44d"},
                {"type": "emoji", "name": "rocket"},
                {"type": "text", "text": " <script>alert(1)</script>\nsecond line"},
            ],
        },
        {
            "type": "rich_text_list",
            "style": "bullet",
            "indent": 0,
            "elements": [
                {"type": "rich_text_section", "elements": [{"type": "text", "text": "first"}]},
                {"type": "rich_text_section", "elements": [{"type": "text", "text": "second"}]},
            ],
        },
        {
            "type": "rich_text_list",
            "style": "bullet",
            "indent": 1,
            "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": "nested"}]}],
        },
        {
            "type": "rich_text_list",
            "style": "ordered",
            "indent": 0,
            "offset": 2,
            "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": "third step"}]}],
        },
        {"type": "rich_text_quote", "elements": [{"type": "text", "text": "quoted words"}]},
        {"type": "rich_text_preformatted", "elements": [{"type": "text", "text": "$ parley up\nready"}]},
    ],
}


def test_rich_text_is_drawn_with_its_styles(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, ws, _ = setup
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    ws.post_message("C0GENERAL", "Deploy now", [RICH_TEXT])
    rich = page.get_by_test_id("message").get_by_test_id("block-rich_text")
    expect(rich).to_be_visible()
    assert rich.get_by_text("not shown in the playground").count() == 0
    section = rich.locator(".rt-section")
    assert section.locator("strong").all_inner_texts() == ["Deploy ", "now"]
    assert section.locator("strong > em").inner_text() == "now"  # bold and italic at once
    assert section.locator("del").inner_text() == "never"
    assert section.locator("code").inner_text() == "make deploy"
    link = section.get_by_role("link")
    assert link.count() == 1 and link.get_attribute("href") == "https://example.com/runbook"
    expect(link).to_have_text("the runbook")
    assert section.locator(".mention").all_inner_texts() == ["@bob", "#ops"]
    assert section.locator(".emoji").all_inner_texts() == ["👍", "🚀"]
    expect(section).to_contain_text("not a link")
    expect(section).to_contain_text("<script>alert(1)</script>")
    assert section.locator("script").count() == 0 and dialogs == []
    assert section.evaluate("n => n.getBoundingClientRect().height") > 30  # "second line" is a line of its own

    lists = rich.locator(".rt-list")
    expect(lists).to_have_count(3)
    assert lists.nth(0).evaluate("n => n.tagName") == "UL"
    assert lists.nth(0).locator("li").all_inner_texts() == ["first", "second"]
    styles = lists.evaluate_all("ns => ns.map(n => [getComputedStyle(n).listStyleType, n.style.marginLeft])")
    assert styles == [["disc", "0px"], ["circle", "28px"], ["decimal", "0px"]]
    assert lists.nth(2).evaluate("n => [n.tagName, n.start]") == ["OL", 3]
    expect(rich.locator("blockquote.rt-quote")).to_have_text("quoted words")
    assert rich.locator("pre.rt-pre").inner_text() == "$ parley up\nready"


def test_a_user_group_shows_its_handle_and_reassign_sends_the_person_picked(
    setup: tuple[Any, Workspace, StubBot],
) -> None:
    from playwright.sync_api import expect

    page, ws, stub = setup
    question = blocks.question_blocks(details_request("Groups"), IID, assignees=["S0REVIEWERS"])
    posted = ws.post_message("C0GENERAL", "Question", question)
    message = page.get_by_test_id("main-pane").locator(f'[data-testid="message"][data-ts="{posted["ts"]}"]')
    expect(message).to_contain_text("Asked of @reviewers")
    with page.expect_response("**/ui/action"):
        message.get_by_test_id("users_select").select_option("U0CAROL")
    body = stub.last()
    action = body["actions"][0]
    assert (action["type"], action["action_id"], action["selected_user"]) == (
        "users_select",
        "parley_reassign",
        "U0CAROL",
    )
    assert body["state"]["values"][f"qr|{IID}|1"]["parley_reassign"] == {
        "type": "users_select",
        "selected_user": "U0CAROL",
    }


def test_a_channels_header_shows_its_id_as_slacks_channel_details_do(setup: tuple[Any, Workspace, StubBot]) -> None:
    from playwright.sync_api import expect

    page, _, _ = setup
    page.get_by_test_id("channel-general").click()
    expect(page.get_by_test_id("channel-id")).to_have_text("Channel ID: C0GENERAL")
    page.get_by_test_id("channel-ops").click()
    expect(page.get_by_test_id("channel-id")).to_have_text("Channel ID: C0OPS")
