"""`parley slack setup` tells what an app made from an older manifest adds for Slack's agent surfaces.

Slack sends a token's scopes with each reply (`X-OAuth-Scopes`); the stand-in does too when told.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from loopback_slack import LoopbackSlack
from terminal_support import parley_command

from parley.slack_setup import AGENT_APP_LACKS

pytestmark = pytest.mark.system
BOT = "xoxb-1111-2222-goodBotToken0001"
APP = "xapp-1-A0PARLEY-3333-goodAppToken0002"
OLD_SCOPES = "commands,chat:write,channels:join,channels:history,users:read,im:write"


def setup_with(scopes: str | None, tmp_path: Path) -> str:
    with LoopbackSlack.serving(BOT, APP) as slack:
        slack.ws.oauth_scopes = scopes
        done = subprocess.run(
            [*parley_command(), "slack", "setup", "--bot-token", "-", "--app-token", "-"],
            cwd=tmp_path, env=slack.command_env(tmp_path), input=f"{BOT}\n{APP}\n",
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_app_without_assistant_write_is_told_what_to_add(tmp_path: Path) -> None:
    assert AGENT_APP_LACKS in setup_with(OLD_SCOPES, tmp_path)


def test_an_agent_app_is_told_nothing_more(tmp_path: Path) -> None:
    shown = setup_with(OLD_SCOPES + ",assistant:write", tmp_path)
    assert "workspace Parley Playground, bot @parley (xoxb-…0001)\n" in shown
    assert AGENT_APP_LACKS not in shown
