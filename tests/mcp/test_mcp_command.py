"""`parley mcp` refuses a machine it cannot act for, in one line, before speaking MCP on stdout."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

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


@pytest.mark.parametrize(
    ("env", "named"),
    [({"SLACK_BOT_TOKEN": ""}, "SLACK_BOT_TOKEN"), ({"PARLEY_MCP_ORIGIN": ""}, "PARLEY_MCP_ORIGIN")],
)
def test_a_host_sees_the_missing_setting_in_initializes_error(env: dict[str, str], named: str, tmp_path: Path) -> None:
    """The official client over stdio, as a desktop host starts it: not "Connection closed", but the variable."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "PARLEY_"))}
    child_env.update({"PARLEY_DATA_DIR": str(tmp_path), "SLACK_BOT_TOKEN": "xoxb-test", **env})
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "parley.cli", "mcp"], env=child_env, cwd=tmp_path
    )

    async def connect() -> MCPError | None:
        try:
            async with Client(params, read_timeout_seconds=30):
                return None
        except Exception as exc:
            return _mcp_error(exc)

    refused = anyio.run(connect)
    assert isinstance(refused, MCPError), refused
    assert named in str(refused) and "parley mcp cannot start" in str(refused)


def _mcp_error(exc: BaseException) -> MCPError | None:
    """The MCP error among `exc` and the exception groups the SDK's task groups wrap it in."""
    if isinstance(exc, MCPError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        return next((found for e in exc.exceptions if (found := _mcp_error(e)) is not None), None)
    return None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, "parley: cannot read the rules file 'rules.yml': No such file or directory"),
        ("rules: [{tools: '*', action: maybe}]", "parley: rules.yml: rules.0.action: Input should be"),
        ("channel: C0OPS\nassignees: ['${NOBODY_SET_THIS}']", "parley: assignees[0]: ${NOBODY_SET_THIS} is not set"),
    ],
)
def test_a_rules_file_that_cannot_be_used_stops_it_saying_why(
    text: str | None, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if text is not None:
        (tmp_path / "rules.yml").write_text(text)
    assert main(["mcp", "--config", "rules.yml"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines()[-1].startswith(expected), err
