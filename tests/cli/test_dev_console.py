"""`parley dev`'s console: on a terminal, readable lines prefixed by the process they came from (`bot`,
`worker`, and `redis` for the embedded Redis's log); otherwise JSON lines carrying it as `process`
(tests/docs/test_docs_commands.py reads those). Bolt's warning about a token it was given twice, which
nobody can act on, is never shown."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_dev_lifecycle import belonging_to, free_port_pair

from parley.supervisor import marked

pytestmark = pytest.mark.system

READABLE = re.compile(r"^(bot|worker) +\| \d\d:\d\d:\d\d (INFO|WARNING) ", re.MULTILINE)
REDIS = re.compile(r"^redis +\| .*ready to accept connections", re.MULTILINE | re.IGNORECASE)


def test_a_line_is_marked_with_its_process_for_reading_or_as_json() -> None:
    line = json.dumps({"ts": 1.0, "level": "info", "msg": "serving over HTTP"})
    assert marked("bot", "12:00:00 INFO serving over HTTP", readable=True) == "bot    | 12:00:00 INFO serving over HTTP"
    assert json.loads(marked("worker", line, readable=False)) == {
        "process": "worker", "ts": 1.0, "level": "info", "msg": "serving over HTTP",
    }  # fmt: skip
    assert json.loads(marked("bot", "Traceback (most recent call last):", readable=False)) == {
        "process": "bot", "msg": "Traceback (most recent call last):",
    }  # fmt: skip


def test_on_a_terminal_the_lines_are_readable_and_prefixed_by_process(tmp_path: Path) -> None:
    port = free_port_pair()
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith(("SLACK_", "PARLEY_"))}
    env.update(PARLEY_DATA_DIR=str(data_dir), PARLEY_LOG_LEVEL="INFO")
    leader, follower = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "parley.cli", "dev", "--port", str(port)],
        env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, start_new_session=True,
    )  # fmt: skip
    os.close(follower)
    seen = ""
    try:
        deadline = time.monotonic() + 90
        while "Metrics: " not in seen or not re.search(r"^worker +\| ", seen, re.MULTILINE) or not REDIS.search(seen):
            assert time.monotonic() < deadline and proc.poll() is None, seen
            if select.select([leader], [], [], 0.5)[0]:
                seen += os.read(leader, 65536).decode("utf-8", "replace").replace("\r\n", "\n")
        assert {m[0] for m in READABLE.findall(seen)} == {"bot", "worker"}, seen
        assert not re.search(r"^(bot|worker) +\| \{", seen, re.MULTILINE), seen  # no JSON on a terminal
        assert "As you gave `client`" not in seen
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            os.close(leader)
    deadline = time.monotonic() + 20
    while belonging_to(data_dir, port) and time.monotonic() < deadline:
        time.sleep(0.2)
