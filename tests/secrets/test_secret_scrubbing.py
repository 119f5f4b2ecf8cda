"""A secret the agent's own code lets out, and a second secret for an answered question.

An agent may quote the secret it was given: `int(token)` raises a `ValueError` that quotes it,
and a result may hold it. The run's error, its history (error and trace), the failure or result
posted in Slack and every log line show `••••` instead. And a second form with another secret,
submitted after the first was accepted, is refused as already answered, as free text is: the
masked answers look the same whatever the secret.

The bot's bolt app gets Slack's signed payloads, an in-process RQ worker runs the agents of
`secret_agents` on the test Redis, and the Web API is the loopback stand-in.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import secret_agents  # noqa: F401  (registers s-secret, s-secret-int and s-secret-echo)
from cryptography.fernet import Fernet
from inprocess_bot import Bot, PausedRun, running_bot
from runtime_helpers import work
from secret_agents import TOKEN_LABEL
from secret_support import bodies_holding, captured_logs, keys_holding
from slack_forms import form_state
from slack_payloads import view_submission_payload

from workers.interaction import SECRET_MASK
from workers.store.records import InterruptState, RunStatus
from workers.store.sealed import SecretBox

pytestmark = pytest.mark.integration

KEY = Fernet.generate_key().decode()


@pytest.fixture
def bot(r: redis.Redis, tmp_path: Path) -> Iterator[Bot]:
    with running_bot(r, tmp_path, secret_key=KEY, max_retries=1) as running:
        yield running


def _fresh_secret() -> str:
    return f"tok-{secrets.token_hex(12)}"


def _open_form(bot: Bot, paused: PausedRun) -> dict[str, Any]:
    """U0BOB clicks "Answer in a form" on the question; the modal opened for it."""
    before = {v["id"] for v in bot.ws.open_views("U0BOB")}
    assert bot.click(paused, "parley_open_form", user="U0BOB").status == 200
    return bot.wait_for("the form", lambda: [v for v in bot.ws.open_views("U0BOB") if v["id"] not in before])[0]


def _submit(bot: Bot, view: dict[str, Any], secret: str) -> Any:
    payload = view_submission_payload(
        user="U0BOB", view=view, state_values=form_state(view["blocks"], {TOKEN_LABEL: secret})
    )
    return bot.interact(payload)


def test_a_secret_quoted_by_the_agents_exception_is_masked_everywhere(bot: Bot, r: redis.Redis) -> None:
    secret = _fresh_secret()
    with captured_logs() as logs:
        paused = bot.paused("s-secret-int", {"assignees": ["U0BOB"]})
        resp = _submit(bot, _open_form(bot, paused), secret)
        assert (resp.status, resp.body) == (200, "")
        work(bot.runtime)  # raises, is retried once (history: error and trace), raises again and fails
        bot.settle(0.3)

    run = bot.runtime.store.get(paused.run.id)
    quoted = f"ValueError: invalid literal for int() with base 10: '{SECRET_MASK}'"
    assert (run.status, run.error) == (RunStatus.FAILED, quoted)
    history = bot.runtime.store.history(run.id)
    [retry] = [h for h in history if h.event == "retry"]
    assert retry.detail["error"] == quoted and quoted in retry.detail["trace"]
    assert [h.detail["error"] for h in history if h.event == "failed"] == [quoted]
    assert secret not in json.dumps([h.model_dump() for h in history], ensure_ascii=False)
    assert keys_holding(r, secret) == []

    failure = bot.wait_call("chat.postMessage", lambda c: "invalid literal" in json.dumps(c, ensure_ascii=False))
    assert SECRET_MASK in json.dumps(failure, ensure_ascii=False)
    assert bodies_holding(bot.ws.calls(), secret) == []

    [failed] = [line for line in logs.lines if "run failed after retries" in line]
    assert "invalid literal for int()" in failed and SECRET_MASK in failed  # its trace, masked
    assert logs.holding("invalid literal") and logs.holding(secret) == []


def test_a_secret_returned_in_the_result_is_masked(bot: Bot, r: redis.Redis) -> None:
    secret = _fresh_secret()
    with captured_logs() as logs:
        paused = bot.paused("s-secret-echo", {"assignees": ["U0BOB"]})
        assert _submit(bot, _open_form(bot, paused), secret).status == 200
        work(bot.runtime)
        bot.settle(0.3)

    run = bot.runtime.store.get(paused.run.id)
    assert (run.status, run.result) == (RunStatus.SUCCEEDED, f"the token is {SECRET_MASK}")
    posted = bot.wait_call("chat.postMessage", lambda c: "the token is" in json.dumps(c, ensure_ascii=False))
    assert SECRET_MASK in json.dumps(posted, ensure_ascii=False)
    assert bodies_holding(bot.ws.calls(), secret) == []
    assert keys_holding(r, secret) == [] and logs.holding(secret) == []


def test_a_second_form_with_another_secret_is_refused_as_already_answered(bot: Bot, r: redis.Redis) -> None:
    """Two forms open on one question: the first submitted is the answer, the other is refused."""
    paused = bot.paused("s-secret", {"assignees": ["U0BOB"], "confirm": False})
    first_form, second_form = _open_form(bot, paused), _open_form(bot, paused)
    first, corrected = _fresh_secret(), _fresh_secret()

    resp = _submit(bot, first_form, first)
    assert (resp.status, resp.body) == (200, "")
    resp = _submit(bot, second_form, corrected)
    assert resp.status == 200
    ack = json.loads(resp.body or "{}")
    assert ack.get("response_action") == "update", f"the second secret was taken as accepted: {resp.body!r}"
    assert "already answered by <@U0BOB>" in json.dumps(ack["view"], ensure_ascii=False)
    assert corrected not in (resp.body or "")

    # The first form delivered again (Slack retries a submission) is still the answer already made.
    resp = _submit(bot, first_form, first)
    assert (resp.status, resp.body) == (200, "")
    interrupt = bot.runtime.store.interrupt(paused.interrupt.id)
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED
    [sealed] = [v.decode() for v in r.hgetall(f"parley:run:{paused.run.id}:secrets").values()]
    assert SecretBox(KEY).open(sealed) == {"token": first}
    assert keys_holding(r, corrected) == []
