"""No password of a URL is shown or logged: `REDIS_URL` in "cannot reach Redis", log lines, the LLM's errors."""

from __future__ import annotations

import io
import json
import logging
import socket

import pytest

from parley import cli
from parley.bootstrap import connect_redis
from parley.settings import Settings
from workers import logs
from workers.exceptions import ConfigError
from workers.llm.client import ChatClient, LLMConfig, LLMError
from workers.logs import redacted

pytestmark = pytest.mark.unit

PASSWORD = "hunter2-s3cret"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("redis://parley:pw@host:6379/0", "redis://parley:***@host:6379/0"),
        ("rediss://:pw@host:6380/1?ssl_cert_reqs=none", "rediss://:***@host:6380/1?ssl_cert_reqs=none"),
        ("redis://user:p@ss@host/0", "redis://user:***@host/0"),
        (
            "redis+sentinel://u:pw@h1:26379,h2:26379/main/0?sentinel_password=pw&sentinel_username=s",
            "redis+sentinel://u:***@h1:26379,h2:26379/main/0?sentinel_password=***&sentinel_username=s",
        ),
        ("POST https://tok3n@hooks.example.com/in failed", "POST https://***@hooks.example.com/in failed"),
        ("https://api.example.com/v1?api_token=abc", "https://api.example.com/v1?api_token=***"),
        ("redis://host:6379/0 and unix:///tmp/r.sock", "redis://host:6379/0 and unix:///tmp/r.sock"),
        ("no url here: user:pw@host", "no url here: user:pw@host"),
    ],
)
def test_the_userinfo_of_every_url_is_masked(text: str, shown: str) -> None:
    assert redacted(text) == shown


def test_cannot_reach_redis_names_the_url_without_its_password() -> None:
    port = closed_port()
    settings = Settings(_env_file=None, redis_url=f"redis://parley:{PASSWORD}@127.0.0.1:{port}/6")  # type: ignore[call-arg]
    with pytest.raises(ConfigError) as info:
        connect_redis(settings)
    message = str(info.value)
    assert message.startswith(f"REDIS_URL: cannot reach redis://parley:***@127.0.0.1:{port}/6: ")
    assert PASSWORD not in message


def test_the_command_line_shows_no_password(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    port = closed_port()
    monkeypatch.setenv(
        "REDIS_URL", f"redis+sentinel://:{PASSWORD}@127.0.0.1:{port}/main/0?sentinel_password={PASSWORD}"
    )
    assert cli.main(["runs", "list"]) == 2
    err = capsys.readouterr().err
    assert "parley: REDIS_URL: cannot reach redis+sentinel://:***@127.0.0.1" in err and PASSWORD not in err, err


@pytest.mark.parametrize("tty", [True, False])
def test_log_lines_mask_urls_in_messages_fields_and_tracebacks(monkeypatch: pytest.MonkeyPatch, tty: bool) -> None:
    stream = io.StringIO()
    stream.isatty = lambda: tty  # type: ignore[method-assign]
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    monkeypatch.setattr("sys.stderr", stream)
    try:
        logs.configure("INFO")
        try:
            raise ConnectionError(f"lost redis://parley:{PASSWORD}@10.0.0.5:6379/0")
        except ConnectionError:
            logs.Log("parley.test").error(
                f"cannot reach redis://parley:{PASSWORD}@10.0.0.5:6379/0",
                exc=True,
                url=f"https://{PASSWORD}@hooks.example.com/in",
                run_id="r1",
            )
    finally:
        root.handlers[:], root.level = handlers, level
    out = stream.getvalue()
    assert PASSWORD not in out, out
    assert "redis://parley:***@10.0.0.5:6379/0" in out and "https://***@hooks.example.com/in" in out
    if not tty:
        doc = json.loads(out)
        assert doc["run_id"] == "r1" and doc["url"] == "https://***@hooks.example.com/in"


def test_an_unreachable_model_is_named_without_its_credentials() -> None:
    port = closed_port()
    config = LLMConfig(base_url=f"http://agent:{PASSWORD}@127.0.0.1:{port}/v1", model="m", timeout=2)
    with ChatClient(config) as chat, pytest.raises(LLMError) as info:
        chat.complete([{"role": "user", "content": "hi"}])
    assert f"the model at http://agent:***@127.0.0.1:{port}/v1/chat/completions" in str(info.value)
    assert PASSWORD not in str(info.value)
