"""`parley serve` checks its settings before it says it serves: a missing token is the only thing it prints."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from slack_stack import free_port

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["serve", "--port", str(free_port())], "SLACK_BOT_TOKEN"),
        (["serve", "--socket-mode"], "SLACK_BOT_TOKEN"),
    ],
)
def test_nothing_configured_is_refused_before_serving(
    argv: list[str], missing: str, redis_url: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "PARLEY_"))}
    env.update(REDIS_URL=redis_url, PARLEY_DATA_DIR=str(tmp_path), PARLEY_LOG_FORMAT="json")
    done = subprocess.run(
        [sys.executable, "-m", "parley.cli", *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done
    assert f"parley: {missing} is not set" in done.stderr
    assert "serving over" not in done.stderr + done.stdout, done.stderr


def test_a_signing_secret_is_asked_for_before_serving_over_http(redis_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "PARLEY_"))}
    env.update(REDIS_URL=redis_url, PARLEY_DATA_DIR=str(tmp_path), SLACK_BOT_TOKEN="xoxb-test")
    done = subprocess.run(
        [sys.executable, "-m", "parley.cli", "serve", "--port", str(free_port())],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "parley: SLACK_SIGNING_SECRET is not set" in done.stderr, done
    assert "serving over HTTP" not in done.stderr


def test_a_busy_port_is_one_line_before_serving(redis_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "PARLEY_"))}
    env.update(
        REDIS_URL=redis_url, PARLEY_DATA_DIR=str(tmp_path), SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="s"
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "parley.cli", "serve", "--port", str(port)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == f"parley: port {port} is in use; pick another with --port\n", done.stderr
