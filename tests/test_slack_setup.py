"""`parley slack setup` against the Web API stand-in and a loopback Socket Mode server.

The real command runs in a directory of its own (where it writes `.env`), with
`SLACK_API_URL` pointing at the stand-in, which knows only the tokens named here. Scripts
pass the tokens on standard input (or as flags, with a warning); a person is driven in a pty,
typing and pasting as one would.
`BROWSER` names a script that records the link it is asked to open.
"""

from __future__ import annotations

import io
import json
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pexpect
import pytest
from dotenv import dotenv_values
from loopback_slack import LoopbackSlack
from manifest_schema import schema_errors
from slack_stack import free_port
from terminal_support import parley_command

from parley.slack_manifest import socket_mode_manifest

pytestmark = pytest.mark.system

BOT = "xoxb-1111-2222-goodBotToken0001"
APP = "xapp-1-A0PARLEY-3333-goodAppToken0002"
CONFIG = "xoxe.xoxp-1-goodConfigToken0003"
OTHER_BOT = "xoxb-9999-8888-otherBotToken0004"
WRONG_BOT = "xoxb-1111-2222-wrongBotToken0005"
WRONG_APP = "xapp-1-A0PARLEY-3333-wrongAppToken6"
TIMEOUT = 30
LINK = r"(https://api\.slack\.com/apps\?new_app=1&manifest_json=\S+)\s"  # whole: the link may come in two reads


@pytest.fixture
def slack() -> Iterator[LoopbackSlack]:
    with LoopbackSlack.serving(BOT, APP, CONFIG, OTHER_BOT) as slack:
        yield slack


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The directory `parley slack setup` runs in, with a browser that records what it opens."""
    browser = tmp_path / "browser"
    browser.write_text('#!/bin/sh\nprintf "%s" "$1" > "$(dirname "$0")/opened"\n')
    browser.chmod(0o755)
    (tmp_path / "clone").mkdir()
    return tmp_path / "clone"


def env_for(slack: LoopbackSlack, home: Path, **extra: str) -> dict[str, str]:
    return slack.command_env(home.parent / "data", BROWSER=str(home.parent / "browser"), **extra)


def setup(
    slack: LoopbackSlack, home: Path, *args: str, stdin: str | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    """`parley slack setup ARGS` as a script runs it: no terminal; `stdin` piped in, or nothing."""
    command = parley_command()
    return subprocess.run(
        [*command, "slack", "setup", *args], cwd=home, env=env_for(slack, home, **extra),
        stdin=subprocess.DEVNULL if stdin is None else None, input=stdin, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def in_pty(slack: LoopbackSlack, home: Path, *args: str, **extra: str) -> tuple[pexpect.spawn, io.StringIO]:
    """`parley slack setup ARGS` in a pty, and the transcript of everything it shows."""
    command = parley_command()
    term = pexpect.spawn(
        command[0], [*command[1:], "slack", "setup", *args], cwd=str(home), env=env_for(slack, home, **extra),
        encoding="utf-8", timeout=TIMEOUT, dimensions=(50, 200),
    )  # fmt: skip
    term.logfile_read = transcript = io.StringIO()
    return term, transcript


def finish(term: pexpect.spawn) -> int:
    term.expect(pexpect.EOF)
    term.close()
    return int(term.exitstatus if term.exitstatus is not None else -1)


def saved(home: Path) -> dict[str, str | None]:
    path = home / ".env"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return dotenv_values(path)


def never_shown(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text, f"{secret[:5]}… shown in full"


def decoded_manifest(link: str) -> dict:
    return json.loads(parse_qs(urlsplit(link).query)["manifest_json"][0])


# ---- scripts: flags and the environment -----------------------------------------------------
def test_good_tokens_on_standard_input_are_checked_and_saved_in_a_0600_env(slack: LoopbackSlack, home: Path) -> None:
    done = setup(slack, home, "--bot-token", "-", "--app-token", "-", stdin=f"{BOT}\n{APP}\n")
    assert done.returncode == 0, done.stderr
    assert saved(home) == {"SLACK_BOT_TOKEN": BOT, "SLACK_APP_TOKEN": APP}
    assert "workspace Parley Playground, bot @parley (xoxb-…0001)" in done.stdout
    assert "Socket Mode connection (xapp-…0002)" in done.stdout
    assert done.stderr == ""  # no warning: nothing secret was on the command line
    never_shown(done.stdout + done.stderr, BOT, APP)
    assert [c["token"] for c in slack.ws.calls("auth.test")] == [BOT]
    assert [c["token"] for c in slack.ws.calls("apps.connections.open")] == [APP]


def test_tokens_as_flags_are_taken_with_a_warning_that_ps_shows_them(slack: LoopbackSlack, home: Path) -> None:
    done = setup(slack, home, "--bot-token", BOT, "--app-token", APP)
    assert done.returncode == 0, done.stderr
    assert saved(home) == {"SLACK_BOT_TOKEN": BOT, "SLACK_APP_TOKEN": APP}
    [warning] = done.stderr.splitlines()
    assert warning.startswith("parley: warning: a token on the command line (--bot-token, --app-token)")
    assert "visible to other users in ps" in warning and "--bot-token - to read it from standard input" in warning
    never_shown(done.stdout + done.stderr, BOT, APP)


def test_one_token_on_standard_input_and_one_in_the_environment(slack: LoopbackSlack, home: Path) -> None:
    done = setup(slack, home, "--app-token", "-", stdin=f"{APP}\n", SLACK_BOT_TOKEN=BOT)
    assert done.returncode == 0, done.stderr
    assert saved(home) == {"SLACK_BOT_TOKEN": BOT, "SLACK_APP_TOKEN": APP} and done.stderr == ""


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        (f"{APP}\n{BOT}\n", "--bot-token -: line 1 of standard input is not a bot token (xoxb-…); give one token "
         "a line: bot token, then app-level token"),
        (f"{BOT}\n", "--app-token -: standard input ended before the app-level token (line 2)"),
    ],
)  # fmt: skip
def test_tokens_on_standard_input_in_the_wrong_order_or_missing_are_refused(
    slack: LoopbackSlack, home: Path, stdin: str, says: str
) -> None:
    done = setup(slack, home, "--bot-token", "-", "--app-token", "-", stdin=stdin)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"parley: {says}"]
    never_shown(done.stdout + done.stderr, BOT, APP)
    assert not (home / ".env").exists() and slack.ws.calls() == []


def test_tokens_in_the_environment_are_saved_like_flags(slack: LoopbackSlack, home: Path) -> None:
    done = setup(slack, home, SLACK_BOT_TOKEN=BOT, SLACK_APP_TOKEN=APP)
    assert done.returncode == 0, done.stderr
    assert saved(home) == {"SLACK_BOT_TOKEN": BOT, "SLACK_APP_TOKEN": APP}


def test_without_a_terminal_or_the_tokens_it_refuses_in_one_line(slack: LoopbackSlack, home: Path) -> None:
    done = setup(slack, home, "--bot-token", "-", stdin=f"{BOT}\n")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--app-token -" in done.stderr and "terminal" in done.stderr
    assert "SLACK_APP_TOKEN" in done.stderr
    assert not (home / ".env").exists() and slack.ws.calls() == []


def test_a_wrong_token_from_a_script_is_refused_and_nothing_is_written(slack: LoopbackSlack, home: Path) -> None:
    done = setup(slack, home, "--bot-token", "-", "--app-token", "-", stdin=f"{BOT}\n{WRONG_APP}\n")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "parley: Slack refused the app-level token xapp-…ken6 (invalid_auth): it does not know this token"
    ]
    assert not (home / ".env").exists()


def test_a_different_value_in_env_is_kept_when_nobody_can_be_asked(slack: LoopbackSlack, home: Path) -> None:
    (home / ".env").write_text(f"SLACK_BOT_TOKEN={OTHER_BOT}\n")
    done = setup(slack, home, "--bot-token", BOT, "--app-token", APP)
    assert done.returncode == 2
    assert "already has another SLACK_BOT_TOKEN (xoxb-…0004)" in done.stderr
    assert (home / ".env").read_text() == f"SLACK_BOT_TOKEN={OTHER_BOT}\n"


def test_a_config_token_creates_the_app_and_env_holds_its_secrets(slack: LoopbackSlack, home: Path) -> None:
    done = setup(slack, home, "--config-token", "-", stdin=f"{CONFIG}\n")
    assert done.returncode == 0, done.stderr
    assert "--bot-token - --app-token -" in done.stdout  # how to give the tokens next
    [(app_id, app)] = slack.ws.apps().items()
    assert app["manifest"] == socket_mode_manifest()
    assert not schema_errors(app["manifest"])
    credentials = app["credentials"]
    assert saved(home) == {
        "SLACK_SIGNING_SECRET": credentials["signing_secret"],
        "SLACK_CLIENT_ID": credentials["client_id"],
        "SLACK_CLIENT_SECRET": credentials["client_secret"],
    }
    [create] = slack.ws.calls("apps.manifest.create")
    install = next(line for line in done.stdout.splitlines() if "/oauth/v2/authorize?" in line)
    assert parse_qs(urlsplit(install).query)["client_id"] == [credentials["client_id"]]
    assert f"https://api.slack.com/apps/{app_id}/oauth" in done.stdout  # where the bot token will be
    never_shown(done.stdout + done.stderr, CONFIG, credentials["signing_secret"], credentials["client_secret"])
    assert create["token"] == CONFIG


def test_a_wrong_config_token_creates_nothing(slack: LoopbackSlack, home: Path) -> None:
    done = setup(slack, home, "--config-token", "xoxe.xoxp-1-unknown")
    assert done.returncode == 2
    assert "Slack refused the app configuration token xoxe.xoxp-… (invalid_auth): it does not know" in done.stderr
    assert slack.ws.apps() == {} and not (home / ".env").exists()


def test_a_slack_it_cannot_reach_is_told_apart_from_a_refusal_in_one_line(slack: LoopbackSlack, home: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}/api/"  # nothing listens there: the connection is refused
    done = setup(slack, home, "--bot-token", "-", "--app-token", "-", stdin=f"{BOT}\n{APP}\n", SLACK_API_URL=closed)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"parley: cannot reach Slack at {closed} (Connection refused)"]
    assert "refused the" not in done.stdout + done.stderr and "{" not in done.stdout + done.stderr  # no library JSON
    assert not (home / ".env").exists()


# ---- a person at a terminal -----------------------------------------------------------------
def test_a_token_given_as_a_flag_is_not_asked_for_again_at_a_terminal(slack: LoopbackSlack, home: Path) -> None:
    term, transcript = in_pty(slack, home, "--bot-token", WRONG_BOT, "--app-token", APP)
    term.expect_exact("parley: Slack refused the bot token xoxb-…0005 (invalid_auth): it does not know this token")
    assert finish(term) == 2
    assert "Bot token:" not in transcript.getvalue() and not (home / ".env").exists()

    closed = f"http://127.0.0.1:{free_port()}/api/"
    term, transcript = in_pty(slack, home, "--bot-token", BOT, "--app-token", APP, SLACK_API_URL=closed)
    term.expect_exact(f"parley: cannot reach Slack at {closed} (Connection refused)")
    assert finish(term) == 2
    shown = transcript.getvalue()
    assert "Bot token:" not in shown and "refused the" not in shown and '{"' not in shown, shown
    assert not (home / ".env").exists()


def test_a_person_creates_the_app_and_pastes_the_tokens_wrong_then_right(slack: LoopbackSlack, home: Path) -> None:
    term, transcript = in_pty(slack, home)
    term.expect(LINK)
    link = term.match.group(1)
    assert not schema_errors(decoded_manifest(link)) and decoded_manifest(link) == socket_mode_manifest()
    term.expect_exact("Open it in your browser? [Y/n]")
    term.sendline("")
    term.expect_exact("Opened it in your browser.")
    assert unquote((home.parent / "opened").read_text()) == unquote(link)

    term.expect_exact('"OAuth & Permissions"')
    term.expect_exact("Bot User OAuth Token")
    term.expect_exact("Bot token:")
    term.sendline(WRONG_BOT)
    term.expect_exact("✗ Slack refused the bot token (invalid_auth): it does not know this token. Paste it again")
    term.expect_exact("Bot token:")
    term.sendline(BOT)
    term.expect_exact("✓ workspace Parley Playground, bot @parley (xoxb-…0001)")

    term.expect_exact('"App-Level Tokens"')
    term.expect_exact("connections:write")
    term.expect_exact("App-level token:")
    term.sendline(BOT)  # the wrong kind
    term.expect_exact("✗ this is not an app-level token: an app-level token starts with xapp-")
    term.expect_exact("App-level token:")
    term.sendline(APP)
    term.expect_exact("✓ it opens a Socket Mode connection (xapp-…0002)")
    term.expect_exact("Saved SLACK_BOT_TOKEN, SLACK_APP_TOKEN in")
    term.expect_exact("Next: parley up")
    assert finish(term) == 0
    assert saved(home) == {"SLACK_BOT_TOKEN": BOT, "SLACK_APP_TOKEN": APP}
    never_shown(transcript.getvalue(), BOT, APP, WRONG_BOT)


def test_a_person_is_asked_before_a_value_in_env_is_replaced(slack: LoopbackSlack, home: Path) -> None:
    (home / ".env").write_text(f"# my settings\nSLACK_BOT_TOKEN={OTHER_BOT}\n")
    for answer, kept in (("n", OTHER_BOT), ("y", BOT)):
        term, transcript = in_pty(slack, home, "--bot-token", BOT, "--app-token", APP)
        term.expect_exact("has another SLACK_BOT_TOKEN (xoxb-…0004). Replace it? [y/N]")
        term.sendline(answer)
        assert finish(term) == 0
        assert saved(home) == {"SLACK_BOT_TOKEN": kept, "SLACK_APP_TOKEN": APP}
        assert (home / ".env").read_text().startswith("# my settings\n")
        never_shown(transcript.getvalue(), BOT, APP, OTHER_BOT)


def test_a_person_with_a_config_token_installs_the_app_and_pastes_its_tokens(slack: LoopbackSlack, home: Path) -> None:
    term, transcript = in_pty(slack, home, "--config-token", CONFIG)
    term.expect(r"Created app (A0\w+)")
    app_id = term.match.group(1)
    term.expect(r"(http://\S+/oauth/v2/authorize\?\S+)")
    term.expect_exact("Open it in your browser? [Y/n]")
    term.sendline("n")
    term.expect_exact(f"https://api.slack.com/apps/{app_id}/oauth")
    term.expect_exact("Bot token:")
    term.sendline(BOT)
    term.expect_exact(f"https://api.slack.com/apps/{app_id}/general")
    term.expect_exact("App-level token:")
    term.sendline(APP)
    assert finish(term) == 0
    credentials = slack.ws.apps()[app_id]["credentials"]
    assert saved(home) == {
        "SLACK_SIGNING_SECRET": credentials["signing_secret"],
        "SLACK_CLIENT_ID": credentials["client_id"],
        "SLACK_CLIENT_SECRET": credentials["client_secret"],
        "SLACK_BOT_TOKEN": BOT,
        "SLACK_APP_TOKEN": APP,
    }
    assert not (home.parent / "opened").exists()
    never_shown(transcript.getvalue(), CONFIG, BOT, APP, credentials["signing_secret"])
