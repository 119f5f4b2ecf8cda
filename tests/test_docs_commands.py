"""The README's and docs/api.md's commands, run verbatim against a started `parley dev`, each succeeds.

A reader's first hour: start `parley dev`, then run each shell command of the docs that talks to
it, in order, as written. The only changes are what a reader makes too: the port (the docs say
3000; a free one is used here), and `$PARLEY_TOKEN` and `$ID` taken from what an earlier command
printed. A curl "succeeds" when it exits 0 and prints no problem document. While a `?wait=` is
open, a person answers the question in the playground by replying in its thread, as the docs say.
The same `parley dev` also shows that the banner's MCP configuration works over stdio and HTTP,
and that its console is JSON lines marked with their process when it is not a terminal.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from test_dev_lifecycle import Dev

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="parley dev's tests find processes in /proc"),
]

ROOT = Path(__file__).resolve().parents[1]
DOCS_PORT = "localhost:3000"
BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
BANNER_END = "Metrics: "


def shell_blocks(doc: str) -> list[str]:
    """The doc's bash blocks that talk to a running Parley: its API, or its tokens."""
    text = (ROOT / doc).read_text()
    return [b for b in BLOCK.findall(text) if _talks_to_parley(b)]


def _talks_to_parley(block: str) -> bool:
    typed = [line for line in block.splitlines() if not line.lstrip().startswith("#")]  # comments are not run
    return any(DOCS_PORT in line for line in typed) or block.lstrip().startswith("parley tokens")


def commands(block: str) -> list[str]:
    """The block's commands one by one, as a reader pastes them: continued lines and quoted newlines kept."""
    found: list[str] = []
    pending = ""
    for line in block.splitlines(keepends=True):
        pending += line
        if pending.rstrip().endswith("\\"):
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        if pending.strip():
            found.append(pending.strip())
        pending = ""
    assert not pending.strip(), f"unfinished command: {pending}"
    return found


def problems(output: str) -> list[dict[str, Any]]:
    """The problem documents (RFC 9457) among the JSON values `output` holds, one after another."""
    found, decoder, at = [], json.JSONDecoder(), 0
    while (start := output.find("{", at)) != -1:
        try:
            value, at = decoder.raw_decode(output, start)
        except ValueError:
            at = start + 1
            continue
        if isinstance(value, dict) and isinstance(value.get("status"), int) and "title" in value:
            found.append(value)
    return found


CARRIED = ("PARLEY_TOKEN", "PARLEY_WEBHOOK_SECRET", "ID")
"""Shell variables a command may set for the commands after it."""


class Reader:
    """A person at a shell beside `parley dev`: runs commands, keeps what they printed, answers in the playground."""

    def __init__(self, dev: Dev, tmp_path: Path) -> None:
        self.dev = dev
        self.cwd = tmp_path
        self.env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith(("SLACK_", "PARLEY_"))}
        self.env.update(
            PARLEY_DATA_DIR=str(dev.data_dir), PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
        )
        self.asked: dict[str, Any] | None = None

    def run(self, command: str) -> str:
        typed = command.replace(DOCS_PORT, f"localhost:{self.dev.port}")
        answering = self._answer_while_waiting() if "wait=" in typed and self.asked else None
        # Each command runs in a shell of its own; what it set (`eval "$(parley tokens create …)"`)
        # is carried to the next, as it stays set in a reader's one shell.
        kept = self.cwd / ".shell-vars"
        keep = "; ".join(f'[ -n "${{{v}+x}}" ] && printf "%s=%s\\n" {v} "${v}"' for v in CARRIED)
        script = f"{typed}\nstatus=$?\n{{ {keep}; }} > {shlex.quote(str(kept))}\nexit $status"
        done = subprocess.run(
            ["bash", "-c", script], cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=120
        )
        if kept.exists():
            for line in kept.read_text().splitlines():
                name, _, value = line.partition("=")
                if name in CARRIED and value:
                    self.env[name] = value
        if answering is not None:
            answering.join(30)
        said = f"$ {command}\n{done.stdout}\n{done.stderr}"
        assert done.returncode == 0, said
        assert problems(done.stdout) == [], said
        self._remember(done.stdout)
        return done.stdout

    def _remember(self, out: str) -> None:
        token = re.search(r"^PARLEY_TOKEN=(\S+)$", out, re.MULTILINE)
        if token and "PARLEY_TOKEN" not in self.env:  # the first one printed, as the reader exports it
            self.env["PARLEY_TOKEN"] = token[1]
        if out.lstrip().startswith("{"):
            view = json.loads(out)
            if isinstance(view, dict) and view.get("status") == "waiting" and view.get("message_ts"):
                self.env["ID"], self.asked = view["id"], view

    def _answer_while_waiting(self) -> threading.Thread:
        """A person replies with the first option in the question's thread, shortly after the wait began."""
        asked = self.asked
        assert asked is not None
        self.asked = None

        def reply() -> None:
            time.sleep(1.0)
            httpx.post(
                f"http://127.0.0.1:{self.dev.port}/ui/message",
                json={"user": "U0BOB", "channel": asked["channel"], "text": "1", "thread_ts": asked["message_ts"]},
                timeout=10,
            )

        thread = threading.Thread(target=reply, daemon=True)
        thread.start()
        return thread


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[Dev]:
    started = Dev(tmp_path, 0, log_level="INFO")
    try:
        started.wait_ready()
        deadline = time.monotonic() + 30
        while BANNER_END not in started.output():
            assert time.monotonic() < deadline, started.output()
            time.sleep(0.1)
        yield started
    finally:
        started.kill()


@pytest.mark.parametrize("doc", ["README.md", "docs/api.md"])
def test_every_command_of_the_doc_runs_verbatim_against_parley_dev(doc: str, dev: Dev, tmp_path: Path) -> None:
    blocks = shell_blocks(doc)
    assert blocks, f"{doc} has no command that talks to parley dev"
    reader = Reader(dev, tmp_path)
    ran = [reader.run(command) for block in blocks for command in commands(block)]
    if doc == "README.md":  # its question is one choice, which a reply answers; api.md's has a Submit form too
        assert any('"status":"answered"' in out.replace(" ", "") for out in ran), "the wait did not see the answer"


def banner_config(dev: Dev) -> dict[str, Any]:
    """The MCP host configuration the banner prints (the JSON object after its `MCP:` line)."""
    out = dev.output()
    start = out.index("{", out.index("MCP: "))
    config, _ = json.JSONDecoder().raw_decode(out, start)
    return dict(config["mcpServers"])


def ask(client_factory: Any) -> dict[str, Any]:
    arguments = {
        "channel": "#general",
        "wait_seconds": 0,
        "questions": [{"id": "go", "header": "Go", "question": "Ship it?", "type": "single",
                       "options": [{"label": "Yes"}, {"label": "No"}]}],
    }  # fmt: skip

    async def call() -> dict[str, Any]:
        async with client_factory() as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"ask_human", "get_answer"} <= names
            result = await client.call_tool("ask_human", arguments)
            assert not result.is_error, result
            return dict(result.structured_content or {})

    return anyio.run(call)


def test_the_banner_names_the_channels_and_its_mcp_configuration_works_over_both_transports(dev: Dev) -> None:
    out = dev.output()
    assert "Channels: #general C0GENERAL, #ops C0OPS" in out
    assert f"HTTP API: http://127.0.0.1:{dev.port}/api/v1" in out
    servers = banner_config(dev)
    stdio, http = servers["parley"], servers["parley-http"]

    def over_stdio() -> Client:
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith(("SLACK_", "PARLEY_"))}
        params = StdioServerParameters(command=stdio["command"], args=stdio["args"], env={**env, **stdio["env"]})
        return Client(params, read_timeout_seconds=60)

    def over_http() -> Client:
        client = httpx2.AsyncClient(headers=http["headers"], timeout=httpx2.Timeout(30, read=60))
        return Client(streamable_http_client(http["url"], http_client=client))

    for connect in (over_stdio, over_http):
        asked = ask(connect)
        assert asked["status"] == "waiting" and asked["question_id"], asked
    assert http["url"] == f"http://127.0.0.1:{dev.port}/mcp"


def test_the_console_is_json_marked_by_process_without_bolts_warning(dev: Dev) -> None:
    lines = [line for line in dev.output().splitlines() if line.startswith("{")]
    children = [json.loads(line) for line in lines if '"process"' in line]
    assert {doc["process"] for doc in children} >= {"bot", "worker"}, dev.output()
    assert "As you gave `client`" not in dev.output()
    assert not any(line.startswith("[") for line in dev.output().splitlines()), dev.output()
