"""A secret asked in the terminal: the real `parley run` in a pty reads it without echo.

The whole transcript of the terminal (everything the command wrote) is searched for the
secret; the run gets it whole, and when the run has ended nothing of it is left in Redis.
Without `PARLEY_SECRET_KEY` the same run stops with one line naming the variable.
"""

from __future__ import annotations

import io
import json
import os
import secrets
from pathlib import Path

import pexpect
import pytest
import redis
from cryptography.fernet import Fernet
from secret_agents import TOKEN_LABEL
from secret_support import keys_holding
from terminal_support import TESTS, TIMEOUT, finish, parley_command, parley_env, started_run, stored

from workers.store.records import RunStatus

pytestmark = pytest.mark.system


def _spawn(redis_url: str, data_dir: Path, transcript: io.StringIO, **env: str) -> pexpect.spawn:
    """`parley run s-secret` without the go-ahead, with the secret agents importable."""
    environment = parley_env(redis_url, data_dir)
    environment.update(
        PARLEY_AGENTS="secret_agents",
        PYTHONPATH=os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p),
        **env,
    )
    command = parley_command()
    term = pexpect.spawn(
        command[0],
        [*command[1:], "run", "s-secret", json.dumps({"confirm": False})],
        env=environment,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(50, 200),
    )
    term.logfile_read = transcript
    return term


def test_the_terminal_reads_a_secret_without_echo(redis_url: str, r: redis.Redis, tmp_path: Path) -> None:
    secret = f"otp-{secrets.token_hex(10)}"
    transcript = io.StringIO()
    term = _spawn(redis_url, tmp_path, transcript, PARLEY_SECRET_KEY=Fernet.generate_key().decode())
    run_id = started_run(term, "s-secret")
    term.expect(TOKEN_LABEL)
    term.send(secret)
    # A person sees the stars before pressing Enter; sent with the Enter at once, the prompt
    # may take both in one batch and never draw the field (and then there is nothing to read).
    term.expect_exact("*" * len(secret))
    term.send("\r")
    assert finish(term) == 0, transcript.getvalue()
    run = stored(redis_url, run_id)
    assert (run.status, run.result) == (RunStatus.SUCCEEDED, "token came back whole: yes; -")
    shown = transcript.getvalue()
    assert "*" * len(secret) in shown  # what was typed showed as stars
    assert secret not in shown
    assert keys_holding(r, secret) == [] and not r.exists(f"parley:run:{run_id}:secrets")


def test_the_terminal_run_without_a_key_stops_with_one_line(redis_url: str, tmp_path: Path) -> None:
    transcript = io.StringIO()
    term = _spawn(redis_url, tmp_path, transcript)
    run_id = started_run(term, "s-secret")
    finish(term)
    shown = transcript.getvalue()
    # The person reads one line (the log line on standard error says the same, as a log).
    told = [line for line in shown.splitlines() if "Failed:" in line]
    assert len(told) == 1 and "Failed: PARLEY_SECRET_KEY is not set, so a secret answer cannot be kept" in told[0]
    assert "Traceback" not in shown and TOKEN_LABEL not in shown
    assert stored(redis_url, run_id).status is RunStatus.FAILED
