"""Rotating `PARLEY_SECRET_KEY`: several comma-separated Fernet keys, the first sealing, all opening.

Real runs on the test Redis (an in-process RQ worker, the `s-secret` agent), answered through
acceptance as a host would. A secret sealed under the old key is still opened by processes
given `NEW,OLD`; what they seal opens with the new key alone; a process that has dropped the
old key can open nothing sealed under it.
"""

from __future__ import annotations

import secrets

import pytest
import redis
import secret_agents  # noqa: F401  (registers s-secret)
from cryptography.fernet import Fernet
from runtime_helpers import make_runtime, paused, start, work

from parley import settings as parley_settings
from parley.settings import ConfigError
from workers.exceptions import SecretUnreadable
from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.store.records import RunStatus
from workers.store.sealed import SecretBox

pytestmark = pytest.mark.integration

OLD = Fernet.generate_key().decode()
NEW = Fernet.generate_key().decode()


def _sealed(r: redis.Redis, run_id: str) -> str:
    [token] = [v.decode() for v in r.hgetall(f"parley:run:{run_id}:secrets").values()]
    return token


def test_a_rotated_key_list_opens_old_copies_and_seals_with_the_first(r: redis.Redis, tmp_path) -> None:
    before = make_runtime(r, tmp_path, secret_key=OLD)
    old_run = start(before, "s-secret", {"confirm": False})
    work(before)
    old_secret = f"otp-{secrets.token_hex(10)}"
    accept(before, paused(before, old_run), "U1", [Answer(id="token", secret=old_secret)])
    sealed_old = _sealed(r, old_run)

    rotated = make_runtime(r, tmp_path, secret_key=f"{NEW}, {OLD}")  # as PARLEY_SECRET_KEY="NEW,OLD"
    with pytest.raises(SecretUnreadable):
        SecretBox(NEW).open(sealed_old)  # the new key alone cannot: the old one must stay listed
    new_run = start(rotated, "s-secret", {"confirm": False})
    work(rotated)  # replays the old run with its secret opened under OLD, and asks the new run's token
    done = rotated.store.get(old_run)
    assert (done.status, done.result) == (RunStatus.SUCCEEDED, "token came back whole: yes; -"), done.error

    new_secret = f"otp-{secrets.token_hex(10)}"
    accept(rotated, paused(rotated, new_run), "U1", [Answer(id="token", secret=new_secret)])
    sealed_new = _sealed(r, new_run)
    assert SecretBox(NEW).open(sealed_new) == {"token": new_secret}  # the first key sealed it
    with pytest.raises(SecretUnreadable):
        SecretBox(OLD).open(sealed_new)

    # Once the old key is dropped, a copy sealed under it (an AOF, RDB or backup) opens nowhere.
    assert SecretBox(NEW).open(sealed_new) == {"token": new_secret}
    with pytest.raises(SecretUnreadable):
        SecretBox(f"{NEW},{Fernet.generate_key().decode()}").open(sealed_old)


def test_a_malformed_key_in_the_list_is_named_by_position_never_quoted(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARLEY_SECRET_KEY", f"{NEW},not-a-key-hunter2")
    with pytest.raises(ConfigError) as stopped:
        parley_settings.load()
    message = str(stopped.value)
    assert message.startswith("PARLEY_SECRET_KEY: ") and "key 2 of 2" in message
    assert "hunter2" not in message and NEW not in message
    monkeypatch.setenv("PARLEY_SECRET_KEY", f"{NEW},{OLD}")
    loaded = parley_settings.load()
    assert loaded.parley_secret_key is not None and loaded.parley_secret_key.get_secret_value() == f"{NEW},{OLD}"
