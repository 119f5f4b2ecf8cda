"""docs/integrations.md's commands, run verbatim in a fresh virtual environment against `parley dev`.

As tests/docs/test_docs_commands.py does for the README and docs/api.md: the repository is copied, the
README's set-up command makes `.venv` and installs Parley into it, and each command of the doc
then runs in one shell with that `.venv` active, as a reader pastes them. The extras install as
the doc writes them, before `parley dev` starts. Each `/parley` line is typed in the playground,
and a person answers there as the prose says. With no `PARLEY_LLM_*` set, `oa_cleanup` and
`pai_invoice` run on the playground's scripted model, so the `export PARLEY_LLM_*` line is left
out, as the doc says. The Temporal block starts its own `temporal` and `parley dev`, in a second
shell; its ports are free ones instead of 7233 and 3000, the only change a reader might make.

`greeter.py` is saved as the doc says and `parley dev` starts with `PARLEY_AGENTS=greeter`.
Not run here: the other Python snippets, which are fragments to adapt rather than commands.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from slack_stack import free_port
from test_dev_lifecycle import READY, free_port_pair
from test_docs_commands import BANNER_END, INSTALL_TIMEOUT, ROOT, FreshDev, clean_env, clone, commands, problems

__all__ = ["clone"]  # the fixture, shared with the README's test

pytestmark = pytest.mark.system

DOC = "docs/integrations.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)
MAKE_VENV = "python3 -m venv .venv && . .venv/bin/activate && pip install -e ."
ALICE, CHANNEL = "U0ALICE", "C0GENERAL"
SCRIPTED = "(scripted model: no PARLEY_LLM_* configured)"


def doc_blocks() -> list[tuple[str, str]]:
    """The doc's bash blocks and `/parley` lines, in order."""
    found = BLOCK.findall((ROOT / DOC).read_text())
    return [(k, c) for k, c in found if k == "bash" or (k in ("", "text") and c.startswith("/parley "))]


def saved_modules() -> dict[str, str]:
    """The doc's Python blocks that name the file to save them as (`# greeter.py`)."""
    found = BLOCK.findall((ROOT / DOC).read_text())
    return {m.group(1): c for k, c in found if k == "python" and (m := re.match(r"# (\w+)\.py\n", c))}


class Shell:
    """A reader's terminal: one bash, fed one command at a time, its output kept in a file."""

    def __init__(self, cwd: Path, env: dict[str, str], log: Path) -> None:
        self.log, self.count = log, 0
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                ["bash"], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                text=True, start_new_session=True,
            )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def run(self, command: str, meanwhile: Callable[[], Any] = lambda: None, timeout: float = 600) -> str:
        """Types `command`, waits for its prompt to return, and checks it succeeded."""
        self.count += 1
        mark, start = f"__done_{self.count}__", len(self.output())
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{command}\necho {mark} $?\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while not (done := re.search(rf"^{mark} (\d+)$", self.output()[start:], re.MULTILINE)):
            assert self.proc.poll() is None and time.monotonic() < deadline, f"$ {command}\n{self.output()[start:]}"
            meanwhile()
            time.sleep(0.3)
        said = f"$ {command}\n{self.output()[start:][: done.start()]}"
        assert done.group(1) == "0", said
        assert problems(said) == [], said
        return said

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.proc.poll() is None and time.monotonic() < deadline, f"no {text!r}:\n{self.output()[-4000:]}"
            time.sleep(0.3)

    def close(self) -> None:
        """Ctrl-C, then a stop, then a kill, until nothing it started is left.

        A non-interactive bash starts its `&` jobs deaf to Ctrl-C, so SIGINT alone may leave them.
        """
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                self.proc.poll()  # reaps the shell itself
                try:
                    os.killpg(self.proc.pid, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.2)


class Playground:
    """A person in the playground's page: types `/parley`, reads the channel, clicks and submits."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.done: set[str] = set()

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = httpx.post(f"{self.url}{path}", json={"user": ALICE, **body}, timeout=60)
        assert reply.status_code == 200, reply.text
        return dict(reply.json())

    def state(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.url}/ui/state", params={"user": ALICE}, timeout=10).json())

    def messages(self) -> list[dict[str, Any]]:
        return list(self.state()["messages"].get(CHANNEL, []))

    def wait(self, what: str, find: Callable[[], Any], timeout: float = 120) -> Any:
        deadline = time.monotonic() + timeout
        while not (found := find()):
            assert time.monotonic() < deadline, f"no {what}: {json.dumps(self.messages())[-4000:]}"
            time.sleep(0.3)
        return found

    def message(self, what: str, has: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        return dict(self.wait(what, lambda: next((m for m in self.messages() if has(m)), None)))

    def click(self, message: dict[str, Any], action_id: str) -> None:
        for block in message.get("blocks") or []:
            for element in block.get("elements") or []:
                if element.get("action_id") == action_id:
                    surface = {"kind": "message", "channel": CHANNEL, "ts": message["ts"]}
                    body = {"block_id": block["block_id"], "action_id": action_id, "value": element.get("value")}
                    self.post("/ui/action", {"surface": surface, **body})
                    return
        raise AssertionError(f"no {action_id} in {message}")

    def submit(self, values: Callable[[dict[str, Any]], str | None]) -> None:
        """Fills the open modal's inputs that `values` gives a value for, and submits it."""
        form = self.wait("the modal", lambda: self.state()["modals"])[-1]
        inputs = {
            b["block_id"]: {b["element"]["action_id"]: value}
            for b in form["blocks"]
            if b["type"] == "input" and (value := values(b)) is not None
        }
        self.post("/ui/view/submit", {"view_id": form["id"], "inputs": inputs})

    def approvals(self, mentioning: str) -> list[dict[str, Any]]:
        found = [m for m in self.messages() if mentioning in json.dumps(m) and "parley_approve" in json.dumps(m)]
        return [m for m in found if m["ts"] not in self.done]

    def approve_when_asked(self, mentioning: str) -> Callable[[], None]:
        """What a person watching the channel does: approves the first approval mentioning `mentioning`."""

        def look() -> None:
            for message in self.approvals(mentioning)[:1]:
                self.done.add(message["ts"])
                self.click(message, "parley_approve")

        return look


def act(page: Playground, command: str, data: Path) -> None:
    """What the prose tells the person to do after the `/parley` line, and the reply it says comes."""
    page.post("/ui/message", {"channel": CHANNEL, "text": command})
    agent = command.split()[1]
    if agent == "oa_cleanup":  # approve one deletion, reject the other with a reason
        asked = page.wait("two deletions", lambda: (found := page.approvals("delete_file"))[1:] and found)
        page.click(asked[0], "parley_approve")
        page.click(asked[1], "parley_reject")
        page.submit(lambda block: "keep it for now")
        reply = page.message("the cleanup's reply", lambda m: SCRIPTED in m.get("text", ""))
        assert reply["text"].startswith(":white_check_mark:"), reply["text"]
        assert len(list((data / "cleanup").rglob("*.tmp"))) == 1  # one deleted, one kept
    elif agent == "lg_refund":  # Edit…, lower the amount to 100, approve
        asked = page.message(
            "the approval", lambda m: "Ann Lee" in json.dumps(m) and "parley_open_form" in json.dumps(m)
        )
        page.click(asked, "parley_open_form")
        page.submit(lambda block: "100" if "amount" in json.dumps(block).lower() else None)
        done = "Done: Refunded 100.00 to Ann Lee for A-1001 (amount edited)."
        page.message("the refund's reply", lambda m: done in m.get("text", ""))
    elif agent == "pai_invoice":  # approve the invoice as the model made it
        page.click(page.wait("the invoice's approval", lambda: page.approvals("ACME Corp"))[0], "parley_approve")
        reply = page.message("the invoice's reply", lambda m: "1200.00 EUR" in m.get("text", ""))
        assert SCRIPTED in reply["text"] and (data / "invoices" / "outbox.jsonl").exists(), reply["text"]
    elif agent == "greeter":  # answer "Ada" in its form
        asked = page.message("the question", lambda m: all(t in json.dumps(m) for t in ("greet", "parley_open_form")))
        page.click(asked, "parley_open_form")
        page.submit(lambda block: "Ada")
        page.message("the greeting", lambda m: "Done: Hello, Ada!" in m.get("text", ""))
    else:
        pytest.fail(f"the doc starts {agent!r}, which this test does not know how to answer")


def limit(command: str) -> float:
    """Seconds a command may take: an install fetches packages, anything else returns soon."""
    return INSTALL_TIMEOUT if command.startswith("pip install") else 180.0


def backgrounded(command: str) -> bool:
    return re.search(r"&\s*(#.*)?$", command) is not None


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def run_temporal_block(block: str, clone: Path, tmp_path: Path) -> str:
    """The Temporal block in a terminal of its own: a person approves the refund in that playground."""
    temporal, port = free_port(), free_port_pair()
    typed = (
        block.replace("--headless", f"--headless --port {temporal}")
        .replace("7233", str(temporal))
        .replace("parley dev", f"parley dev --port {port}")
        .replace(":3000", f":{port}")
    )
    env = {**clean_env(), "PARLEY_DATA_DIR": str(tmp_path / "temporal-data")}
    term, page, out = Shell(clone, env, tmp_path / "temporal-shell.log"), Playground(port), ""
    try:
        term.run(". .venv/bin/activate")
        for command in commands(typed):
            waiting = "start refund.json" in command
            out = term.run(command, page.approve_when_asked("A-17") if waiting else lambda: None, limit(command))
            if backgrounded(command) and "temporal server" in command:
                deadline = time.monotonic() + 60
                while not listening(temporal):
                    assert time.monotonic() < deadline, term.output()[-4000:]
                    time.sleep(0.3)
            elif backgrounded(command) and "parley dev" in command:
                term.wait_for(READY.format(port=port))
                term.wait_for(BANNER_END)
            elif backgrounded(command) and " worker" in command:
                term.wait_for("worker ready")
        assert page.done, "nobody was asked to approve the refund"
        return out
    finally:
        term.close()


def test_every_command_of_the_integrations_doc_runs_verbatim(clone: Path, tmp_path: Path) -> None:
    blocks = doc_blocks()
    installs = [c.strip() for k, c in blocks if k == "bash" and c.startswith("pip install ") and c.count("\n") == 1]
    [temporal] = [c for k, c in blocks if k == "bash" and "temporal server start-dev" in c]
    assert installs, blocks
    data = tmp_path / "data"
    shell = Shell(clone, {**clean_env(), "PARLEY_DATA_DIR": str(data)}, tmp_path / "shell.log")
    dev: FreshDev | None = None
    outputs: list[str] = []
    try:
        started = time.monotonic()
        shell.run(MAKE_VENV, timeout=INSTALL_TIMEOUT)  # the README's set-up command, up to its `parley dev`
        for install in installs:  # the extras come first: `parley dev` loads the agents they serve
            shell.run(install, timeout=INSTALL_TIMEOUT)
        print(f"venv and extras installed: {time.monotonic() - started:.1f} s")
        modules = tmp_path / "modules"  # the doc's module to save, `greeter.py`, listed as it says
        modules.mkdir()
        for name, code in saved_modules().items():
            (modules / f"{name}.py").write_text(code)
        listed = f"PARLEY_AGENTS={','.join(saved_modules())} PYTHONPATH={modules}"
        dev = FreshDev(clone, data, f". .venv/bin/activate && {listed} parley dev")
        dev.wait_ready()
        page = Playground(dev.port)
        for kind, code in blocks:
            if kind != "bash":
                act(page, code.strip(), data)
            elif code.strip() not in installs and code != temporal:
                for command in commands(code):
                    if not command.startswith("export PARLEY_LLM_"):  # the scripted model instead, as the doc says
                        outputs.append(shell.run(command, timeout=limit(command)))
    finally:
        shell.close()
        if dev is not None:
            dev.kill()
    ledger = next(out for out in outputs if "ledger.jsonl" in out.splitlines()[0])
    assert '"order": "A-1001"' in ledger and '"amount": 100' in ledger, ledger
    decision = run_temporal_block(temporal, clone, tmp_path)
    assert '"approved": true' in decision and '"order": "A-17"' in decision, decision
