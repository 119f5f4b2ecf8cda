"""`parley mcp` refuses a machine it cannot act for, in one line, before speaking MCP on stdout."""

from __future__ import annotations

from pathlib import Path

import pytest

from parley.cli import main

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def machine(redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no .env here
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("PARLEY_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.delenv("PARLEY_MCP_ORIGIN", raising=False)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"SLACK_BOT_TOKEN": ""}, "parley: SLACK_BOT_TOKEN is not set; it is needed here"),
        ({"PARLEY_MCP_ORIGIN": ""}, "parley: PARLEY_MCP_ORIGIN: String should have at least 1 character"),
        ({"PARLEY_MCP_ORIGIN": "x" * 65}, "parley: PARLEY_MCP_ORIGIN: String should have at most 64 characters"),
    ],
)
def test_refused_in_one_line_with_nothing_on_stdout(
    env: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["mcp"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines()[-1] == expected
