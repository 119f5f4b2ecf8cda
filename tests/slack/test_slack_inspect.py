"""Inspect in Slack: admins and the people a run asks open its history, question and answers in a modal.

Driven like the other in-process tests: the Home tab Parley published, clicked with Slack's
`block_actions` payloads; the modal is the one the Web API stand-in opened, paged with its
own buttons (`views.update`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from inprocess_bot import Bot, running_bot
from slack_forms import button_action, find_element
from slack_payloads import ADMIN, app_home_opened_event, home_actions_payload

from bot.listeners.inspect import GONE
from bot.slack.blocks_inspect import HISTORY_PAGE
from workers.runtime import admin
from workers.store import keys

pytestmark = pytest.mark.integration


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path) as running:
        yield running


def home_of(bot: Bot, user: str) -> dict[str, Any]:
    before = len(bot.calls("views.publish", lambda c: c["args"].get("user_id") == user))
    assert bot.event(app_home_opened_event(user)).status == 200
    bot.wait_for(
        "the Home tab", lambda: len(bot.calls("views.publish", lambda c: c["args"].get("user_id") == user)) > before
    )
    home = bot.ws.home(user)
    assert home is not None
    return home


def click_inspect(bot: Bot, user: str, home: dict[str, Any], block_id: str) -> dict[str, Any]:
    """Click "Inspect" in the Home tab's block `block_id`; the modal the stand-in opened."""
    block = next(b for b in home["blocks"] if b.get("block_id") == block_id)
    _, button = find_element([block], "parley_inspect")
    payload = home_actions_payload(
        user=user, view=home, action=button_action(block, button), trigger=bot.ws.issue_trigger(user)
    )
    assert bot.interact(payload).status == 200
    opened = bot.wait_call("views.open")
    assert opened["status"] == 200 and opened["error"] is None, opened
    [view] = bot.ws.open_views(user)
    return view


def text_of(view: dict[str, Any]) -> str:
    return "\n".join(str(b.get("text", {}).get("text", "")) for b in view["blocks"]) + "\n" + str(view["blocks"])


def test_an_admin_inspects_a_paused_run_from_the_home_tab_and_pages_its_history(bot: Bot) -> None:
    paused = bot.paused("s-pick", {"assignees": ["U0CAROL"]})
    admin.remind(bot.runtime, paused.run.id, by=ADMIN)
    for n in range(HISTORY_PAGE):
        bot.runtime.store.add_history(paused.run.id, "note", "agent", n=n)
    total = len(bot.runtime.store.history(paused.run.id))
    assert HISTORY_PAGE < total < 2 * HISTORY_PAGE

    view = click_inspect(bot, ADMIN, home_of(bot, ADMIN), f"hra|{paused.run.id}")
    shown = text_of(view)
    assert view["blocks"][0]["text"]["text"] == "s-pick · paused"
    assert "*Waiting for an answer*\nChoose a target" in shown
    assert "Asked of <@U0CAROL> · since <!date^" in shown
    assert "Reminders sent: <!date^" in shown and f"by <@{ADMIN}>" in shown
    assert "*Answers so far*\nNone yet." in shown and "*Steps recorded*\nNone yet." in shown
    assert f"(1 to {HISTORY_PAGE} of {total})" in shown

    nav = next(b for b in view["blocks"] if b.get("block_id") == "inspect|page")
    _, older = find_element([nav], "parley_inspect_page")
    payload = home_actions_payload(user=ADMIN, view=view, action=button_action(nav, older))
    assert bot.interact(payload).status == 200
    updated = bot.wait_call("views.update")
    assert updated["status"] == 200 and updated["error"] is None, updated
    [paged] = bot.ws.open_views(ADMIN)
    assert f"({HISTORY_PAGE + 1} to {total} of {total})" in text_of(paged)
    assert "*started* · <@U0BOB>" in text_of(paged)


def test_the_person_asked_inspects_from_waiting_on_you_and_nobody_else_may(bot: Bot) -> None:
    paused = bot.paused("s-pick", {"assignees": ["U0CAROL"]})
    home = home_of(bot, "U0CAROL")
    view = click_inspect(bot, "U0CAROL", home, "hw|0")
    assert "*Waiting for an answer*\nChoose a target" in text_of(view)

    # Bob started the run but is not asked, and is no admin: the same click (on Carol's tab) shows him nothing.
    block = next(b for b in home["blocks"] if b.get("block_id") == "hw|0")
    _, button = find_element([block], "parley_inspect")
    payload = home_actions_payload(
        user="U0BOB", view=home, action=button_action(block, button), trigger=bot.ws.issue_trigger("U0BOB")
    )
    assert bot.interact(payload).status == 200
    bot.wait_for("Bob's modal", lambda: bot.ws.open_views("U0BOB"))
    [refused] = bot.ws.open_views("U0BOB")
    assert text_of(refused).startswith("Only Parley admins and the people this run asks can inspect it.")
    assert paused.run.id not in str(refused)


@pytest.mark.parametrize("suffix", [":history", ":journal"])
def test_a_tampered_run_id_is_refused_never_an_error(bot: Bot, suffix: str) -> None:
    """`<run id>:history` names the run's history list and `:journal` its journal hash, not a run."""
    paused = bot.paused("s-pick", {"assignees": ["U0CAROL"]})
    for n in range(HISTORY_PAGE):  # two pages: the modal has its Older button
        bot.runtime.store.add_history(paused.run.id, "note", "agent", n=n)
    home = home_of(bot, ADMIN)
    real = click_inspect(bot, ADMIN, home, f"hra|{paused.run.id}")
    nav = next(b for b in real["blocks"] if b.get("block_id") == "inspect|page")
    _, older = find_element([nav], "parley_inspect_page")
    page = {**button_action(nav, older), "value": f"{paused.run.id}{suffix}|1"}
    assert bot.interact(home_actions_payload(user=ADMIN, view=real, action=page)).status == 200
    updated = bot.wait_call("views.update")
    assert updated["status"] == 200, updated
    assert text_of(bot.ws.open_views(ADMIN)[-1]).startswith(GONE)

    block = next(b for b in home["blocks"] if b.get("block_id") == f"hra|{paused.run.id}")
    _, button = find_element([block], "parley_inspect")
    action = {**button_action(block, button), "value": paused.run.id + suffix}
    payload = home_actions_payload(user=ADMIN, view=home, action=action, trigger=bot.ws.issue_trigger(ADMIN))
    assert bot.interact(payload).status == 200
    opened = bot.wait_for("the second modal", lambda: bot.calls("views.open")[1:])
    assert opened[0]["status"] == 200, opened
    assert text_of(bot.ws.open_views(ADMIN)[-1]).startswith(GONE)


def test_a_record_it_cannot_read_never_breaks_inspect_or_the_home_tab(bot: Bot) -> None:
    """A question expiring in year 33715 (an unbounded `expires_in` wrote it so) opens in Inspect; a question
    whose request is garbled is left out of the Home tab, which still shows the others."""
    far = bot.paused("s-pick", {"assignees": ["U0CAROL"]})
    garbled = bot.paused("s-pick", {"assignees": ["U0CAROL"]})
    redis = bot.runtime.redis
    redis.hset(keys.interrupt(far.interrupt.id), "expires_at", repr(1e12 + 1.7e9))
    redis.hset(keys.interrupt(garbled.interrupt.id), "request", '{"reason": ')

    home = home_of(bot, ADMIN)
    view = click_inspect(bot, ADMIN, home, f"hra|{far.run.id}")
    assert view["blocks"][0]["text"]["text"] == "s-pick · paused"
    assert "*Waiting for an answer*\nChoose a target" in text_of(view)

    carol = home_of(bot, "U0CAROL")
    assert far.run.id in str(carol) and garbled.interrupt.id not in str(carol)
