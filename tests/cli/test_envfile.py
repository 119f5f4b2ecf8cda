"""`.env` as `parley slack setup` writes it: mode 0600, other lines kept, values readable by pydantic-settings."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from parley.envfile import EnvFile, mask
from parley.settings import Settings

pytestmark = pytest.mark.unit


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_is_mode_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        EnvFile(tmp_path / ".env").update({"SLACK_BOT_TOKEN": "xoxb-1-2-abc"})
    finally:
        os.umask(old)
    assert mode(tmp_path / ".env") == 0o600
    assert (tmp_path / ".env").read_text() == "SLACK_BOT_TOKEN=xoxb-1-2-abc\n"
    assert [p.name for p in tmp_path.iterdir()] == [".env"]  # no temporary file left


def test_an_update_keeps_other_lines_and_tightens_the_mode(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("# mine\nREDIS_URL=redis://h:6379/2\nexport slack_bot_token=xoxb-old\n")
    path.chmod(0o644)
    env = EnvFile(path)
    env.update({"SLACK_BOT_TOKEN": "xoxb-new", "SLACK_APP_TOKEN": 'xapp "quoted" # not a comment'})
    assert mode(path) == 0o600
    assert path.read_text().splitlines() == [
        "# mine",
        "REDIS_URL=redis://h:6379/2",
        "SLACK_BOT_TOKEN=xoxb-new",
        'SLACK_APP_TOKEN="xapp \\"quoted\\" # not a comment"',
    ]
    assert env.values() == {
        "REDIS_URL": "redis://h:6379/2",
        "SLACK_BOT_TOKEN": "xoxb-new",
        "SLACK_APP_TOKEN": 'xapp "quoted" # not a comment',
    }


def test_settings_read_the_file_and_the_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    EnvFile(tmp_path / ".env").update({"SLACK_BOT_TOKEN": "xoxb-from-file", "SLACK_APP_TOKEN": "xapp-from-file"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-from-env")
    settings = Settings()
    assert (settings.slack_bot_token, settings.slack_app_token) == ("xoxb-from-file", "xapp-from-env")


@pytest.mark.parametrize(
    ("secret", "shown"),
    [
        ("xoxb-1234-5678-abcdefghWXYZ", "xoxb-…WXYZ"),
        ("xapp-1-A0-1234-ffffeeee9876", "xapp-…9876"),
        ("xoxe.xoxp-1-Mi0yLTEyMzQ-abcd", "xoxe.xoxp-…abcd"),
        ("0123456789abcdef0123456789abcdef", "…cdef"),
        ("xoxb-short", "xoxb-…"),
    ],
)
def test_a_secret_is_shown_masked(secret: str, shown: str) -> None:
    assert mask(secret) == shown
