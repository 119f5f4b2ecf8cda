"""`parley dev` in a real browser: the ticket agent from the composer to PAR-…, a refusal, the admin's Home.

Drives Debian's Chromium (never a downloaded browser) with Playwright against a running
`parley dev`, the way a person would: types the slash command, opens the thread, fills
every control of the question (picking components from the multi-select menu and the due
date from the calendar), submits, and reads the result; then, as the admin, reminds and
inspects a paused run. Screenshots go to tests/artifacts/; with PARLEY_UPDATE_SCREENSHOTS=1
the three used in docs/playground.md are refreshed in docs/img/ as well.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from browser_support import ARTIFACTS, ROOT, browser_page, require_chromium
from test_dev_lifecycle import free_port_pair

pytestmark = [pytest.mark.system, pytest.mark.browser]

DOCS_IMG = ROOT / "docs" / "img"
WAIT = 30_000  # ms: a worker run includes an RQ dequeue and a few Web API calls
DOC_SHOTS = ("playground-question.png", "playground-answered.png", "playground-inspect.png")


class DevServer:
    """`parley dev` as a subprocess in its own process group, stopped with Ctrl-C's SIGINT."""

    def __init__(self, redis_url: str, data_dir: Path, log: Path) -> None:
        self.port = free_port_pair()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
        env.update(REDIS_URL=redis_url, PARLEY_DATA_DIR=str(data_dir))
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "parley.cli", "dev", "--port", str(self.port)],
                env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while f"Parley playground: {self.url}" not in self.output():
            assert self.proc.poll() is None, f"parley dev exited:\n{self.output()}"
            assert time.monotonic() < deadline, f"parley dev did not start:\n{self.output()}"
            time.sleep(0.1)
        assert httpx.get(self.url + "/ui/status", timeout=5).json()["bot"]["healthy"] is True

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


@pytest.fixture
def dev(redis_url: str, tmp_path: Path) -> Iterator[DevServer]:
    require_chromium()
    redis.Redis.from_url(redis_url).flushdb()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    server = DevServer(redis_url, tmp_path / "data", ARTIFACTS / "parley-dev.log")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture
def page(dev: DevServer) -> Iterator[Any]:
    with browser_page(dev.url, "playground-last.png") as page:
        yield page


def shot(page: Any, name: str) -> None:
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    if name in DOC_SHOTS and os.environ.get("PARLEY_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, DOCS_IMG / name)


def start_ticket(page: Any, text: str, agent: str = "ticket", *, has: str = "input-block") -> Any:
    """Type the slash command in #general, open the run's thread, and return the question message (the
    thread's message holding a block of test id `has`)."""
    from playwright.sync_api import expect

    page.get_by_test_id("channel-general").click()
    composer = page.get_by_test_id("composer-input")
    composer.click()
    composer.press_sequentially(f"/parley {agent} {text}")
    composer.press("Enter")
    root = page.get_by_test_id("main-pane").get_by_test_id("message").filter(has_text=text)
    expect(root.get_by_test_id("open-thread")).to_be_visible(timeout=WAIT)
    root.click()
    question = page.get_by_test_id("thread-pane").get_by_test_id("message").filter(has=page.get_by_test_id(has))
    expect(question).to_be_visible(timeout=WAIT)
    return question


def field(question: Any, label: str) -> Any:
    return question.get_by_test_id("input-block").filter(has_text=label)


def pick(menu: Any, *labels: str) -> None:
    """Picks each option from a multi-select menu, then closes its list as a person would (Escape)."""
    from playwright.sync_api import expect

    menu.locator(".menu-field").click()
    for label in labels:
        menu.get_by_test_id("menu-option").filter(has_text=label).click()
    menu.locator(".menu-input").press("Escape")
    expect(menu.get_by_test_id("menu-list")).to_be_hidden()


def next_month_15th() -> date:
    """The day the test picks from the calendar: one click on "next month", then the 15th."""
    today = date.today()
    return date(today.year + today.month // 12, today.month % 12 + 1, 15)


def test_ticket_from_composer_to_answer_refusal_and_admin_home(page: Any, dev: DevServer) -> None:
    from playwright.sync_api import expect

    thread = page.get_by_test_id("thread-pane")
    expect(page.get_by_test_id("bot-status")).to_contain_text("connected")
    assert page.get_by_test_id("user-switcher").input_value() == "U0ALICE"

    # alice starts the ticket agent and answers its question, control by control.
    question = start_ticket(page, "Create ticket for login issue")
    ts = question.get_attribute("data-ts")
    expect(question).to_contain_text("I'm filing a ticket for: Create ticket for login issue")
    expect(question).to_contain_text("Asked of @alice")
    expect(field(question, "Who is affected?").locator("select")).to_have_value("All users")  # its default
    description = field(question, "Describe the bug").locator("textarea")
    description.click()
    description.press_sequentially("Login fails on Safari & Firefox.\nSteps: open /login, submit <empty> form.")
    field(question, "Who is affected?").locator("select").select_option(label="Some users")
    field(question, "Severity").locator("select").select_option(label="High")
    components = field(question, "Components")
    pick(components, "Login", "API", "Web app")
    components.get_by_title("Remove API").click()
    expect(components.locator(".chip-label")).to_have_text(["Login", "Web app"])
    due = next_month_15th()
    field(question, "Due date").get_by_test_id("datepicker-field").click()
    field(question, "Due date").get_by_test_id("calendar-next").click()
    field(question, "Due date").locator(f'[data-testid="calendar-day"][data-date="{due.isoformat()}"]').click()
    expect(field(question, "Due date").get_by_test_id("datepicker-field")).to_have_text(f"{due:%b} 15, {due.year}")
    page.mouse.move(0, 0)
    shot(page, "playground-question.png")
    question.get_by_test_id("button-parley_submit").click()

    locked = thread.locator(f'[data-testid="message"][data-ts="{ts}"]')
    expect(locked).to_contain_text("Answered by @alice", timeout=WAIT)
    expect(locked.get_by_test_id("input-block")).to_have_count(0)
    expect(locked.get_by_test_id("button-parley_submit")).to_have_count(0)
    for answer in ("Login fails on Safari & Firefox.", "submit <empty> form.", "Some users", "High", "Login, Web app",
                   due.isoformat()):  # fmt: skip
        expect(locked).to_contain_text(answer)
    final = thread.get_by_test_id("message").filter(has_text="Created PAR-")
    expect(final).to_contain_text("Created PAR-1: Create ticket for login issue. Severity High", timeout=WAIT)
    expect(final).to_contain_text(f"components Login, Web app, due {due.isoformat()}.")
    reply = page.get_by_test_id("thread-input")
    reply.click()
    reply.press_sequentially("Thanks, Parley!")
    page.get_by_test_id("thread-send").click()
    expect(thread.get_by_test_id("message").filter(has_text="Thanks, Parley!")).to_contain_text("alice")
    page.mouse.move(0, 0)
    shot(page, "playground-answered.png")

    # bob is not asked: his Submit on a new run's question is refused, and only he sees why.
    question2 = start_ticket(page, "Printer on fire")
    page.get_by_test_id("user-switcher").select_option("U0BOB")
    expect(question2).to_be_visible()
    field(question2, "Describe the bug").locator("textarea").fill("It is on fire.")
    question2.get_by_test_id("button-parley_submit").click()
    refusal = thread.get_by_test_id("ephemeral").filter(has_text="not yours to answer")
    expect(refusal).to_contain_text("it is waiting on @alice", timeout=WAIT)
    expect(refusal.get_by_test_id("ephemeral-label")).to_contain_text("Only visible to you")
    shot(page, "playground-refusal.png")
    page.get_by_test_id("user-switcher").select_option("U0ALICE")
    expect(thread.get_by_test_id("ephemeral")).to_have_count(0)
    expect(question2.get_by_test_id("button-parley_submit")).to_be_visible()

    # alice, an admin, sees the paused run on the App Home, and its question is waiting on her.
    page.get_by_test_id("nav-home").click()
    home = page.get_by_test_id("home-view")
    expect(home).to_contain_text("Waiting on you", timeout=WAIT)
    expect(home).to_contain_text("Runs")
    run = home.locator('[data-block-id^="hr|"]').filter(has_text="Printer on fire")  # the admin's run list
    expect(run).to_contain_text("ticket paused")
    expect(home).to_contain_text("paused 1")
    expect(home.get_by_test_id("button-parley_admin_remind")).to_be_visible()
    shot(page, "playground-home.png")

    # alice sends a reminder; the Home link opens the question's thread, where it is posted.
    home.get_by_test_id("button-parley_admin_remind").click()
    link = home.get_by_role("link", name="I'm filing a ticket for: Printer on fire")
    link.click()
    expect(question2).to_be_visible()
    expect(thread.get_by_test_id("message").filter(has_text="Reminder:")).to_be_visible(timeout=WAIT)

    # Inspect on her row of paused runs: the run, its question, who was asked, the reminder, its history.
    page.get_by_test_id("nav-home").click()
    home.locator('[data-block-id^="hra|"]').get_by_test_id("button-parley_inspect").click()
    inspect = page.get_by_test_id("modal")
    expect(inspect).to_contain_text("Inspect run", timeout=WAIT)
    expect(inspect).to_contain_text("ticket · paused")
    question_shown = inspect.locator(".block-section").filter(has_text="Waiting for an answer")
    expect(question_shown).to_contain_text("I'm filing a ticket for: Printer on fire")
    expect(inspect).to_contain_text("Asked of @alice")
    expect(inspect.locator(".block-context").filter(has_text="Reminders sent:")).to_contain_text("by @alice")
    expect(inspect).to_contain_text("History, newest first")
    expect(inspect.locator(".block-section").filter(has_text="reminded")).to_contain_text("@alice")
    page.mouse.move(0, 0)
    shot(page, "playground-inspect.png")
    inspect.get_by_test_id("modal-close").click()
    expect(inspect).to_have_count(0)

    # Back in the thread, alice answers in the form instead.
    link.click()
    expect(question2).to_be_visible()
    question2.get_by_test_id("button-parley_open_form").click()
    modal = page.get_by_test_id("modal")
    expect(modal).to_contain_text("Answer", timeout=WAIT)
    modal.get_by_test_id("modal-submit").click()
    expect(modal.get_by_test_id("input-error").first).to_contain_text("Please complete this required field.")
    field(modal, "Describe the bug").locator("textarea").fill("Smoke from tray 2.")
    field(modal, "Severity").locator("select").select_option(label="Critical")
    pick(field(modal, "Components"), "Notifications")
    modal.get_by_test_id("modal-submit").click()
    expect(modal).to_have_count(0, timeout=WAIT)
    done = thread.get_by_test_id("message").filter(has_text="Created PAR-2")
    expect(done).to_contain_text("Severity Critical, affects All users, components Notifications.", timeout=WAIT)


def reply_in_thread(page: Any, text: str) -> None:
    """Type `text` in the open thread's reply box and send it, as a person answers by replying."""
    reply = page.get_by_test_id("thread-input")
    reply.click()
    reply.press_sequentially(text)
    page.get_by_test_id("thread-send").click()


def test_a_typed_reply_answers_the_deploy_approval_as_docs_playground_shows(page: Any, dev: DevServer) -> None:
    """docs/playground.md's reply example: "the second one" under `deploy`'s approval is Reject, and the run goes
    on to record it; "approve" under another run's approval records the deployment."""
    from playwright.sync_api import expect

    thread = page.get_by_test_id("thread-pane")
    question = start_ticket(page, "api v1.4.2 to staging", agent="deploy", has="button-parley_open_form")
    ts = question.get_attribute("data-ts")
    expect(question).to_contain_text("Deploy api v1.4.2 to staging")
    reply_in_thread(page, "the second one")

    locked = thread.locator(f'[data-testid="message"][data-ts="{ts}"]')
    expect(locked).to_contain_text("Rejected by @alice", timeout=WAIT)
    rejected = thread.get_by_test_id("message").filter(has_text="Done: Deployment")
    expect(rejected).to_contain_text("Deployment of api v1.4.2 to staging rejected", timeout=WAIT)

    start_ticket(page, "api v1.4.3 to staging", agent="deploy", has="button-parley_open_form")
    reply_in_thread(page, "approve")
    done = page.get_by_test_id("thread-pane").get_by_test_id("message").filter(has_text="approved and recorded")
    expect(done).to_contain_text("api v1.4.3 to staging with 3 replicas approved and recorded", timeout=WAIT)
    expect(page.get_by_test_id("ephemeral")).to_have_count(0)
