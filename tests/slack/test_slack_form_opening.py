""" "Answer in a form", driven as Slack drives it: the biggest forms open within a modal's budget and are
answered through type-ahead, and a form Slack does not open is told to the person who clicked.

Questions are asked over the HTTP API (a real loopback server), the clicks, option loads and the
submission are Slack's signed payloads, and `views.open` goes to the Web API stand-in, whose fault
injection plays Slack refusing the form.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio as aioredis
from blockcheck import assert_valid_view
from inprocess_bot import CHANNEL, Bot, answers_of, running_bot
from runtime_helpers import work
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload, view_suggestion_payload

from bot.api.app import create_api
from bot.listeners.actions import FORM_TOO_SLOW
from bot.playground import LoopbackServer
from workers.questions import QuestionService, tokens
from workers.store.closings import Closings
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration

USER = "U0CAROL"
VIEW_JSON_MAX = 24 * 1024


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, api_host=True) as running:
        yield running


@pytest.fixture
def api(bot: Bot, redis_url: str) -> Iterator[httpx.Client]:
    """`/api/v1` on a loopback HTTP server, and a client holding an `ask` token."""
    service = QuestionService(bot.runtime, closings=Closings(aioredis.Redis.from_url(redis_url)))
    token = tokens.create(service.store, "forms", ["ask"]).token
    server = LoopbackServer(create_api(service)).start()
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
            yield client
    finally:
        server.stop()


def _select(n: int, text: str, kind: str = "select", options: int = 100) -> dict[str, Any]:
    """A choice item whose options all have 75-character labels and descriptions, each label unique."""
    return {
        "id": f"i{n}",
        "text": text,
        "type": kind,
        "options": [
            {"value": f"i{n}-{k:03d}", "label": f"Option {n}.{k:03d} ".ljust(75, "l"), "description": "D" * 75}
            for k in range(options)
        ],
    }


def big_form() -> dict[str, Any]:
    """Ten items, four of them selects of 100 options with 75-character labels and descriptions."""
    items = [_select(n, f"Item {n}: which of these fits best?") for n in range(4)]
    items += [_select(4, "Item 4: which regions?", "multi_select", 10)]
    items += [{"id": f"i{n}", "text": f"Item {n}: tell us more " + "t" * 400, "type": "free_text"} for n in (5, 6, 7)]
    items += [{"id": f"i{n}", "text": f"Item {n}: when?", "type": "date"} for n in (8, 9)]
    return {"reason": "A long form to fill in. " * 40, "items": items}


def largest_question() -> dict[str, Any]:
    """The largest question the API accepts: ten selects of 100 options, every text at its limit."""
    return {"reason": "R" * 3000, "items": [_select(n, f"Item {n}: " + "T" * 1992) for n in range(10)]}


def _suggested(bot: Bot, view: dict[str, Any], block: dict[str, Any], typed: str) -> list[dict[str, Any]]:
    """The options the bot serves while `typed` is typed into `block`'s select in the open form."""
    payload = view_suggestion_payload(
        user=USER, view=view, block_id=block["block_id"], action_id=block["element"]["action_id"], value=typed
    )
    resp = bot.interact(payload)
    assert resp.status == 200, resp.body
    return json.loads(resp.body)["options"]


def open_form(bot: Bot, message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Click "Answer in a form" on `message` as `USER`: the view the bot sent, and the modal as Slack holds it."""
    block, button = find_element(message["blocks"], "parley_open_form")
    payload = block_actions_payload(
        user=USER,
        message=message,
        channel=CHANNEL,
        action=button_action(block, button),
        trigger=bot.ws.issue_trigger(USER),
    )
    assert bot.interact(payload).status == 200
    opened = bot.wait_call("views.open")
    assert (opened["status"], opened["error"]) == (200, None)
    [held] = bot.ws.open_views(USER)
    return opened["args"]["view"], held


@pytest.mark.parametrize("question", [big_form, largest_question], ids=["big-form", "largest-question"])
def test_the_biggest_forms_open_within_budget_and_every_option_can_be_chosen(
    bot: Bot, api: httpx.Client, question: Any
) -> None:
    request = question()
    resp = api.post("/questions", json={"request": request, "channel": CHANNEL})
    assert resp.status_code == 201, resp.text
    created = resp.json()
    message = bot.ws.message(CHANNEL, created["message_ts"])
    assert message is not None

    sent, view = open_form(bot, message)
    assert len(json.dumps(sent).encode()) <= VIEW_JSON_MAX  # ASCII forms: the same size escaped or not
    assert_valid_view(sent)  # Slack's limits, UTF-16 lengths and the modal budget, checked test-side

    items = {i["id"]: i for i in request["items"]}
    fills: dict[str, Any] = {}
    chosen: dict[str, Any] = {}
    for block in (b for b in view["blocks"] if b["type"] == "input"):
        item, element = items[block["block_id"].split("|")[-1]], block["element"]
        label = block["label"]["text"]
        if item["type"] in ("select", "multi_select"):
            values = [o["value"] for o in item["options"]]
            if element["type"].endswith("external_select"):
                listed = _suggested(bot, view, block, "")  # opened, before anything is typed
                assert [o["value"] for o in listed] == values
                for option in item["options"][::9]:  # and found by what is typed: its number, any case
                    typed = option["label"].split()[1].upper()
                    assert [o["value"] for o in _suggested(bot, view, block, typed)] == [option["value"]]
                pick = _suggested(bot, view, block, item["options"][-1]["label"].split()[1])[0]
            else:
                assert [o["value"] for o in element["options"]] == values
                pick = element["options"][-1]
            fills[label] = [pick] if item["type"] == "multi_select" else pick
            chosen[item["id"]] = [pick["value"]] if item["type"] == "multi_select" else pick["value"]
        elif item["type"] == "date":
            fills[label] = chosen[item["id"]] = "2026-12-24"
        else:
            fills[label] = chosen[item["id"]] = f"typed into {item['id']}"
    assert any(b["element"]["type"] == "external_select" for b in view["blocks"] if b["type"] == "input")

    submitted = view_submission_payload(user=USER, view=view, state_values=form_state(view["blocks"], fills))
    resp_ack = bot.interact(submitted)
    assert (resp_ack.status, resp_ack.body) == (200, "")
    interrupt = bot.runtime.store.interrupt(view["private_metadata"].split("|")[0])
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED
    assert answers_of(interrupt) == chosen


def test_the_api_answers_422_naming_a_field_over_its_limit_in_utf16_units(bot: Bot, api: httpx.Client) -> None:
    request = _select(0, "Pick one", options=2)
    request["options"][1]["label"] = "🚀" * 38  # 38 characters, 76 UTF-16 code units
    resp = api.post("/questions", json={"request": {"reason": "Why", "items": [request]}, "channel": CHANNEL})
    assert resp.status_code == 422 and resp.headers["content-type"].startswith("application/problem+json")
    [error] = resp.json()["errors"]
    assert error["loc"] == ["request", "items", 0, "options", 1, "label"] and "UTF-16" in error["msg"]
    assert bot.ws.calls("chat.postMessage") == []


def _click_open_form(bot: Bot, paused: Any) -> dict[str, Any]:
    """Click "Answer in a form" as Bob; the private message he is sent about it."""
    assert bot.click(paused, "parley_open_form", user="U0BOB").status == 200
    refused = bot.wait_call("views.open")
    assert refused["status"] == 200 and refused["error"] is not None
    told = bot.wait_call("chat.postEphemeral")
    assert (told["args"]["user"], told["args"]["channel"]) == ("U0BOB", CHANNEL)
    assert bot.ws.open_views("U0BOB") == []
    return told


def test_a_form_opened_too_late_asks_the_clicker_to_click_again(bot: Bot, caplog: pytest.LogCaptureFixture) -> None:
    paused = bot.paused("s-form")
    bot.ws.faults.fail_next("views.open", status=200, error="expired_trigger_id")
    with caplog.at_level(logging.WARNING, logger="parley.actions"):
        told = _click_open_form(bot, paused)
    assert told["args"]["text"] == FORM_TOO_SLOW
    [logged] = [r.ctx for r in caplog.records if getattr(r, "ctx", {}).get("error") == "expired_trigger_id"]
    assert logged["run_id"] == paused.run.id and logged["user"] == "U0BOB"
    assert isinstance(logged["click_to_open_s"], float) and logged["click_to_open_s"] >= 0  # action_ts → views.open
    assert [e for e in bot.runtime.store.history(paused.run.id) if e.event == "form refused"] == []
    assert bot.runtime.store.interrupt(paused.interrupt.id).state is InterruptState.OPEN  # type: ignore[union-attr]


def test_a_form_slack_refuses_is_told_to_the_clicker_and_recorded(bot: Bot) -> None:
    paused = bot.paused("s-form")
    messages = ("[ERROR] failed to match all allowed schemas [json-pointer:/view]",)
    bot.ws.faults.fail_next("views.open", status=200, error="invalid_arguments", messages=messages)
    told = _click_open_form(bot, paused)
    text = told["args"]["text"]
    assert "The form could not be opened" in text and "invalid_arguments" in text
    assert "answer in the question's message" in text  # its message has inputs: Submit works there
    [entry] = [e for e in bot.runtime.store.history(paused.run.id) if e.event == "form refused"]
    assert entry.by == "U0BOB"
    assert entry.detail == {
        "interrupt_id": paused.interrupt.id,
        "error": "invalid_arguments",
        "messages": list(messages),
    }


def test_a_question_slack_refuses_without_errors_names_the_error_in_the_thread(bot: Bot) -> None:
    run, root_ts = bot.started("s-form", "refused-blocks")
    bot.ws.faults.fail_next("chat.postMessage", status=200, error="invalid_blocks")  # no `errors` sent
    work(bot.runtime)
    assert bot.runtime.store.get(run.id).status is RunStatus.FAILED
    [failure] = [m for m in bot.ws.thread(CHANNEL, root_ts) if m["text"].startswith(":x: Failed")]
    assert "Slack refused the question's blocks: invalid_blocks" in failure["text"]
    assert "None" not in failure["text"]
