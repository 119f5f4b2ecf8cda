"""How long a secret answer lives: sealed while its run lives, gone the moment the run ends.

Real runs on the test Redis (an in-process RQ worker, the `s-secret` agent, a recording host),
answered through acceptance as a host would. Whatever the ending (succeeded, failed, cancelled,
expired), neither the secret nor its sealed copy is left in any Redis value; a run asked a
secret without `PARLEY_SECRET_KEY` fails with one line before anything is asked.
"""

from __future__ import annotations

import secrets
import time

import pytest
import redis
import secret_agents  # noqa: F401  (registers s-secret)
from cryptography.fernet import Fernet
from runtime_helpers import RecordingHost, make_runtime, paused, start, work
from secret_support import keys_holding

from workers.interaction import Answer
from workers.runtime import admin
from workers.runtime.acceptance import accept, try_accept
from workers.runtime.sweep import sweep
from workers.runtime.wiring import Runtime
from workers.store.records import RunStatus
from workers.store.sealed import SecretBox

pytestmark = pytest.mark.integration

KEY = Fernet.generate_key().decode()


def _secrets_key(run_id: str) -> str:
    return f"parley:run:{run_id}:secrets"


def _answered_secret(rt: Runtime, r: redis.Redis, params: dict) -> tuple[str, str, str]:
    """Start `s-secret`, answer its token, and return (run id, the secret, its sealed token)."""
    run_id = start(rt, "s-secret", params)
    work(rt)
    secret = f"otp-{secrets.token_hex(10)}"
    accept(rt, paused(rt, run_id), "U1", [Answer(id="token", secret=secret)])
    [sealed] = [v.decode() for v in r.hgetall(_secrets_key(run_id)).values()]
    assert SecretBox(KEY).open(sealed) == {"token": secret}
    assert keys_holding(r, secret) == []
    return run_id, secret, sealed


def _gone(r: redis.Redis, run_id: str, secret: str, sealed: str) -> None:
    assert not r.exists(_secrets_key(run_id))
    assert keys_holding(r, secret) == [] and keys_holding(r, sealed) == []


@pytest.mark.parametrize("ending", ["succeeded", "failed", "cancelled", "expired"])
def test_the_sealed_secret_is_deleted_however_the_run_ends(r: redis.Redis, tmp_path, ending: str) -> None:
    rt = make_runtime(r, tmp_path, secret_key=KEY)
    params = {"then": "fail"} if ending == "failed" else {"expires_in": 60}
    run_id, secret, sealed = _answered_secret(rt, r, params)
    work(rt)  # replays with the secret opened, then ends (failed) or asks the go-ahead
    if ending != "failed":
        go = paused(rt, run_id)
        assert r.exists(_secrets_key(run_id)), "the secret must stay sealed while the run lives"
        if ending == "succeeded":
            accept(rt, go, "U1", [Answer(id="go", choice="Go")])
        elif ending == "cancelled":
            admin.cancel(rt, run_id, "cli:tester")
        else:
            assert sweep(rt, now=time.time() + 120).expired
        work(rt)
    run = rt.store.get(run_id)
    assert run.status.value == ending, (run.status, run.error)
    if ending == "succeeded":
        assert run.result == "token came back whole: yes; Go"
    _gone(r, run_id, secret, sealed)


def test_a_retried_run_asks_for_the_secret_again(r: redis.Redis, tmp_path) -> None:
    """A run that failed lost its sealed secret; retried, it asks for it again rather than guess."""
    rt = make_runtime(r, tmp_path, secret_key=KEY)
    run_id, secret, sealed = _answered_secret(rt, r, {"then": "fail"})
    first = paused_id = rt.store.get(run_id).interrupt
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.FAILED
    admin.retry(rt, run_id, "cli:tester")
    work(rt)
    paused_id = paused(rt, run_id)
    again = rt.store.interrupt(paused_id)
    assert paused_id != first and again is not None and (again.key, again.attempt) == ("token", 2)
    _gone(r, run_id, secret, sealed)


def test_a_secret_item_without_a_key_fails_the_ask_with_one_line(r: redis.Redis, tmp_path) -> None:
    host = RecordingHost()
    rt = make_runtime(r, tmp_path, host)
    run_id = start(rt, "s-secret", {})
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.FAILED
    assert (
        run.error.startswith("PARLEY_SECRET_KEY is not set, so a secret answer cannot be kept")
        and "\n" not in run.error
    )
    assert host.questions == [] and rt.store.journal_get(run_id, "ask:token") is None
    assert host.failures == [(run_id, run.error)]


def test_an_answer_with_a_secret_is_refused_by_a_process_without_the_key(r: redis.Redis, tmp_path) -> None:
    """A bot without the key cannot seal the answer: it is refused and nothing is written."""
    rt = make_runtime(r, tmp_path, secret_key=KEY)
    run_id = start(rt, "s-secret", {})
    work(rt)
    iid = paused(rt, run_id)
    keyless = make_runtime(r, tmp_path)

    interrupt = keyless.store.interrupt(iid)
    assert interrupt is not None
    secret = f"otp-{secrets.token_hex(10)}"
    outcome = try_accept(keyless, interrupt, "U1", [Answer(id="token", secret=secret)], team=None, token="t1")
    assert outcome.reason is not None and outcome.reason.value == "unavailable"
    assert rt.store.interrupt(iid).state.value == "open"  # type: ignore[union-attr]
    assert keys_holding(r, secret) == [] and not r.exists(_secrets_key(run_id))
