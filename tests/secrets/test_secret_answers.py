"""Secret answers end to end: asked in Slack, answered in the form, seen again nowhere.

The bot's bolt app gets Slack's signed payloads (the click that opens the form, the form's
`view_submission`), an in-process RQ worker runs the agent on the test Redis, and the Web
API is the loopback stand-in. The secret is then looked for in every Web API body the
stand-in recorded, every log record of the process, and every value in the Redis database.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import secret_agents  # noqa: F401  (registers s-secret)
from cryptography.fernet import Fernet
from inprocess_bot import CHANNEL, Bot, PausedRun, running_bot
from runtime_helpers import work
from secret_agents import GO_LABEL, TOKEN_LABEL
from secret_support import bodies_holding, captured_logs, keys_holding, redis_values
from slack_forms import blocks_of, form_state, is_question, texts
from slack_payloads import thread_reply_event, view_submission_payload

from bot.slack.blocks_inspect import inspect_view
from parley import cli
from workers.interaction import SECRET_MASK
from workers.runtime import admin
from workers.store.records import InterruptState, RunStatus
from workers.store.sealed import SecretBox

pytestmark = pytest.mark.integration

KEY = Fernet.generate_key().decode()


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, secret_key=KEY) as running:
        yield running


def _fresh_secret() -> str:
    return f"tok-{secrets.token_hex(12)}"


def _sealed_values(r: redis.Redis, run_id: str) -> list[str]:
    """The tokens in the run's secrets hash (read here only to prove they are gone later)."""
    return [v.decode() for v in r.hgetall(f"parley:run:{run_id}:secrets").values()]


def _answer_in_the_form(bot: Bot, paused: PausedRun, secret: str) -> None:
    resp = bot.click(paused, "parley_open_form", user="U0BOB")
    assert resp.status == 200
    assert bot.wait_call("views.open")["status"] == 200
    [view] = bot.ws.open_views("U0BOB")
    [field] = [b for b in view["blocks"] if b["type"] == "input"]
    assert field["element"]["type"] == "plain_text_input" and "initial_value" not in field["element"]
    submitted = view_submission_payload(
        user="U0BOB", view=view, state_values=form_state(view["blocks"], {TOKEN_LABEL: secret})
    )
    resp = bot.interact(submitted)
    assert (resp.status, resp.body) == (200, "")


def test_a_secret_answered_in_the_form_is_seen_again_nowhere(
    bot: Bot, r: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    secret = _fresh_secret()
    with captured_logs() as logs:
        paused = bot.paused("s-secret", {"assignees": ["U0BOB"]})
        # The message has no input at all: one button opens the form.
        question = paused.question["blocks"]
        assert [b for b in question if b["type"] == "input"] == []
        buttons = [e["action_id"] for b in question if b["type"] == "actions" for e in b["elements"]]
        assert buttons == ["parley_open_form"]

        _answer_in_the_form(bot, paused, secret)
        answered = bot.runtime.store.interrupt(paused.interrupt.id)
        assert answered is not None and answered.state is InterruptState.ANSWERED
        assert [(a.id, a.value) for a in answered.answers] == [("token", SECRET_MASK)]

        # Sealed at rest: one token in the run's secrets hash opens to the secret; the secret
        # itself is in no key and no value.
        [sealed] = _sealed_values(r, paused.run.id)
        assert SecretBox(KEY).open(sealed) == {"token": secret}
        assert keys_holding(r, sealed) == [f"parley:run:{paused.run.id}:secrets".encode()]
        assert keys_holding(r, secret) == []

        # The worker replays (the token is read back, opened) and asks the go-ahead.
        work(bot.runtime)
        locked = bot.wait_call("chat.update", lambda c: c["args"].get("ts") == paused.question["ts"])
        assert "provided by <@U0BOB>" in texts(blocks_of(locked))
        assert keys_holding(r, secret) == []
        [go] = [m for m in bot.ws.thread(CHANNEL, paused.root_ts) if is_question(m) and GO_LABEL in texts(m["blocks"])]
        second = bot.runtime.store.interrupt(bot.runtime.store.get(paused.run.id).interrupt)
        assert second is not None
        resp = bot.click(PausedRun(paused.run, paused.root_ts, go, second), "parley_choose_0", user="U0BOB")
        assert resp.status == 200
        work(bot.runtime)
        bot.settle(0.3)

    done = bot.runtime.store.get(paused.run.id)
    assert (done.status, done.result) == (RunStatus.SUCCEEDED, "token came back whole: yes; Go")
    assert bot.ws.calls(), "the stand-in recorded no Web API call"
    assert bodies_holding(bot.ws.calls(), secret) == []
    assert logs.lines and logs.holding(secret) == []
    assert redis_values(r), "the search read no key"
    # After the run ended: neither the secret nor its sealed copy is anywhere in Redis.
    assert keys_holding(r, secret) == [] and keys_holding(r, sealed) == []
    assert not r.exists(f"parley:run:{paused.run.id}:secrets")

    # The admin view (what Inspect shows in Slack) has the mask where the answer was.
    detail = admin.show(bot.runtime, paused.run.id)
    inspect = json.dumps(inspect_view(detail), ensure_ascii=False)
    assert SECRET_MASK in inspect and secret not in inspect and sealed not in inspect
    assert secret not in repr(detail)

    # So does `parley runs show`, on the tests' Redis (the embedded one too, when REDIS_URL is unset).
    monkeypatch.setenv("REDIS_URL", redis_url)
    assert cli.main(["runs", "show", paused.run.id]) == 0
    shown = capsys.readouterr().out
    assert SECRET_MASK in shown and secret not in shown and sealed not in shown


def test_a_thread_reply_to_a_secret_question_is_refused_and_points_to_the_form(bot: Bot, r: redis.Redis) -> None:
    paused = bot.paused("s-secret", {"assignees": ["U0BOB"]})
    typed = _fresh_secret()
    reply = thread_reply_event(user="U0BOB", channel=CHANNEL, text=typed, ts=bot.ws.next_ts(), thread_ts=paused.root_ts)
    assert bot.event(reply).status == 200
    told = bot.wait_call("chat.postEphemeral")
    assert (told["args"]["user"], told["args"]["thread_ts"]) == ("U0BOB", paused.root_ts)
    assert "answered only in its form" in told["args"]["text"] and "*Answer in a form*" in told["args"]["text"]
    assert typed not in told["args"]["text"]
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.OPEN and interrupt.answers == []
    assert keys_holding(r, typed) == [] and _sealed_values(r, paused.run.id) == []


def test_a_secret_sent_with_a_submit_click_on_the_message_is_refused(bot: Bot, r: redis.Redis) -> None:
    """Only the form may carry a secret: state values for it on the question's message are refused."""
    paused = bot.paused("s-secret", {"assignees": ["U0BOB"]})
    forged = f"q|{paused.interrupt.id}|1|token"
    secret = _fresh_secret()
    state = {forged: {"answer": {"type": "plain_text_input", "value": secret}}}
    from slack_forms import button_action, find_element
    from slack_payloads import block_actions_payload

    block, button = find_element(paused.question["blocks"], "parley_open_form")
    action = {**button_action(block, button), "action_id": "parley_submit"}
    payload = block_actions_payload(
        user="U0BOB", message=paused.question, channel=CHANNEL, action=action, state_values=state, trigger=None
    )
    bot.interact(payload)
    bot.settle(0.3)
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.OPEN
    assert keys_holding(r, secret) == [] and _sealed_values(r, paused.run.id) == []
