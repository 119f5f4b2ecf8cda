"""The README's and docs/api.md's commands, run verbatim against a started `parley dev`, each succeeds.

A reader's first hour, on a fresh machine: copy the repository, run the README's set-up command as
written (it makes a new virtual environment, `.venv`, installs Parley into it from the copy and
starts `parley dev`), then run each shell command of the docs that talks to it, in order, in a
shell where that `.venv` is active. "Fresh" means a virtual environment made by the command itself,
without the system's or this interpreter's site-packages; pip fetches what it needs (its cache
helps). The only change is one a reader makes too: the port (the docs say 3000; a free one is used
here). `$PARLEY_TOKEN` and `$ID` are what the docs' own commands set and export. A curl
"succeeds" when it exits 0 and prints no problem document. While a `?wait=` is open, a person
answers the question in the playground by replying in its thread, as the docs say.

Not run here: `parley slack setup` and `parley up` need a Slack workspace's tokens, and `parley
run` a terminal (tests/cli/test_cli.py). docs/integrations.md's commands, the Temporal example's
among them, run the same way in tests/docs/test_docs_integrations.py.
The same `parley dev` also shows that the banner's MCP configuration works over stdio and HTTP,
and that its console is JSON lines marked with their process when it is not a terminal.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
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
from test_dev_lifecycle import READY, Dev, free_port_pair

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="parley dev's tests find processes in /proc"),
]

ROOT = Path(__file__).resolve().parents[2]
DOCS_PORT = "localhost:3000"
BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
BANNER_END = "Metrics: "
SET_UP = "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && parley dev"
INSTALL_TIMEOUT = 900.0


def shell_blocks(doc: str) -> list[str]:
    """The doc's bash blocks that talk to a running Parley: its API, or its tokens."""
    text = (ROOT / doc).read_text()
    return [b for b in BLOCK.findall(text) if _talks_to_parley(b)]


def _talks_to_parley(block: str) -> bool:
    typed = [line for line in block.splitlines() if not line.lstrip().startswith("#")]  # comments are not run
    return any(DOCS_PORT in line or "parley tokens " in line for line in typed)


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

    def __init__(self, dev: FreshDev, tmp_path: Path) -> None:
        self.dev = dev
        self.cwd = tmp_path
        self.env = clean_env()
        self.env.update(PARLEY_DATA_DIR=str(dev.data_dir))
        self.asked: dict[str, Any] | None = None

    def run(self, command: str) -> str:
        typed = command.replace(DOCS_PORT, f"localhost:{self.dev.port}")
        assert "$ID" not in command or self.env.get("ID"), f"no command before this one set ID:\n{command}"
        if "wait=" in typed and "ID" in self.env:
            self._look_up_asked()
        answering = self._answer_while_waiting() if "wait=" in typed and self.asked else None
        # Each command runs in a shell of its own; what it set (`eval "$(parley tokens create …)"`)
        # is carried to the next, as it stays set in a reader's one shell.
        kept = self.cwd / ".shell-vars"
        keep = "; ".join(f'[ -n "${{{v}+x}}" ] && printf "%s=%s\\n" {v} "${v}"' for v in CARRIED)
        activate = f". {shlex.quote(str(self.dev.clone / '.venv' / 'bin' / 'activate'))}"
        script = f"{activate}\n{typed}\nstatus=$?\n{{ {keep}; }} > {shlex.quote(str(kept))}\nexit $status"
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
        return done.stdout

    def _look_up_asked(self) -> None:
        """Where the question `$ID` names was posted, so that a person can reply in its thread."""
        url = f"http://127.0.0.1:{self.dev.port}/api/v1/questions/{self.env['ID']}"
        view = httpx.get(url, headers={"Authorization": f"Bearer {self.env['PARLEY_TOKEN']}"}, timeout=10).json()
        if view.get("status") == "waiting" and view.get("message_ts"):
            self.asked = view

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


def clean_env() -> dict[str, str]:
    """This machine's environment without Parley's, Slack's or a virtual environment's settings."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith(("SLACK_", "PARLEY_"))}
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)  # the clone's own code, as installed into its .venv, is what runs
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    return env


class FreshDev:
    """`parley dev` started as the README says, from a clone whose `.venv` the set-up command made."""

    def __init__(self, clone: Path, data_dir: Path, command: str) -> None:
        self.clone, self.data_dir, self.port = clone, data_dir, free_port_pair()
        self.log = data_dir.parent / f"{data_dir.name}.log"
        env = {**clean_env(), "PARLEY_DATA_DIR": str(data_dir), "PARLEY_LOG_LEVEL": "INFO"}
        typed = command.replace("parley dev", f"parley dev --port {self.port}")
        self.started = time.monotonic()
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                ["bash", "-c", typed], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> float:
        """Seconds from the command to the banner's end, when a reader can type in the playground."""
        deadline = time.monotonic() + INSTALL_TIMEOUT
        while READY.format(port=self.port) not in self.output() or BANNER_END not in self.output():
            assert self.proc.poll() is None, f"the set-up command exited:\n{self.output()[-4000:]}"
            assert time.monotonic() < deadline, f"parley dev not ready:\n{self.output()[-4000:]}"
            time.sleep(0.2)
        return time.monotonic() - self.started

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def set_up_command() -> str:
    """The README's one command from a clone to `parley dev`, as the reader pastes it."""
    found = [c for b in BLOCK.findall((ROOT / "README.md").read_text()) for c in commands(b) if "parley dev" in c]
    assert found and found[0] == SET_UP, found
    return found[0]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The repository's files as a fresh clone has them (what git tracks), in a folder of their own."""
    where = tmp_path_factory.mktemp("clone") / "parley"
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, tracked):
        source = ROOT / name
        if source.is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name)
    yield where


@pytest.fixture(scope="module")
def installed(clone: Path) -> Iterator[FreshDev]:
    """The README's set-up command, run as written: a new `.venv`, Parley installed into it, `parley dev`."""
    started = FreshDev(clone, clone.parent / "data-readme", set_up_command())
    try:
        print(f"set-up command to a ready playground: {started.wait_ready():.1f} s")
        yield started
    finally:
        started.kill()


@pytest.fixture
def docs_dev(doc: str, installed: FreshDev, tmp_path: Path) -> Iterator[FreshDev]:
    """The README's `parley dev`; a second doc gets one of its own, from the same `.venv`, on fresh data."""
    if doc == "README.md":
        yield installed
        return
    started = FreshDev(installed.clone, tmp_path / "data", ". .venv/bin/activate && parley dev")
    try:
        started.wait_ready()
        yield started
    finally:
        started.kill()


@pytest.mark.parametrize("doc", ["README.md", "docs/api.md"])
def test_every_command_of_the_doc_runs_verbatim_against_parley_dev(
    doc: str, docs_dev: FreshDev, tmp_path: Path
) -> None:
    blocks = shell_blocks(doc)
    assert blocks, f"{doc} has no command that talks to parley dev"
    reader = Reader(docs_dev, tmp_path)
    ran = [reader.run(command) for block in blocks for command in commands(block)]
    if doc == "README.md":  # its question is one choice, which a reply answers; api.md's has a Submit form too
        assert any('"status":"answered"' in out.replace(" ", "") for out in ran), "the wait did not see the answer"
        print(f"set-up command to the first answer: {time.monotonic() - docs_dev.started:.1f} s")


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
