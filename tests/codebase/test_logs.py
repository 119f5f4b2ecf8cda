"""Log lines: JSON for machines (servers and workers in production), readable lines for a person at a terminal."""

from __future__ import annotations

import io
import json
import logging

import pytest

from workers import logs

pytestmark = pytest.mark.unit


class TtyText(io.StringIO):
    def isatty(self) -> bool:
        return True


def logged(monkeypatch: pytest.MonkeyPatch, stream: io.StringIO) -> str:
    """What one log line about a run looks like on `stream` as standard error."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    monkeypatch.setattr("sys.stderr", stream)
    try:
        logs.configure("INFO")
        logs.Log("parley.admin").info("cancelled", run_id="r1", user="cli:jane")
    finally:
        root.handlers[:], root.level = handlers, level
    return stream.getvalue().strip()


def test_logs_are_readable_on_a_terminal_and_json_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    readable = logged(monkeypatch, TtyText())
    assert readable.endswith("INFO cancelled  run_id=r1 user=cli:jane"), readable
    doc = json.loads(logged(monkeypatch, io.StringIO()))  # servers and workers keep JSON lines
    assert (doc["msg"], doc["run_id"], doc["user"]) == ("cancelled", "r1", "cli:jane")
