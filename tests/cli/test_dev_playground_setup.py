"""What `parley dev` sets up so the docs' examples work there as written, driven as a person would.

Missing extras and broken agent modules are reported for their agent while the rest runs;
loopback webhooks on any port and secret answers work with no settings; and with no model
configured, `pai_invoice` and `oa_cleanup` run offline on the scripted model, their real tools
touching the data folder. A framework "not installed" is a package on PYTHONPATH whose import
raises ModuleNotFoundError, as Python's own does, in the real processes `parley dev` starts.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import subprocess
import symtable
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import Receiver
from test_dev_lifecycle import Dev

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
ALICE, CHANNEL = "U0ALICE", "C0GENERAL"
LABEL = "(scripted model: no PARLEY_LLM_* configured)"
BROKEN = """from workers import agent

raise RuntimeError("OPENAI_API_KEY is not set")  # as a model client made at import raises it


@agent("refunds")
def refunds(run, text): ...
"""
NOT_INSTALLED = "raise ModuleNotFoundError(\"No module named 'langgraph'\", name='langgraph')\n"


def without_langgraph(tmp: Path) -> Path:
    """A PYTHONPATH directory in which `import langgraph` fails as it does where it is not installed."""
    shim = tmp / "shim"
    (shim / "langgraph").mkdir(parents=True, exist_ok=True)
    (shim / "langgraph" / "__init__.py").write_text(NOT_INSTALLED)
    (shim / "broken_agents.py").write_text(BROKEN)
    return shim


def shim_path(tmp: Path) -> str:
    """PYTHONPATH with the shim first, then the code under test."""
    return os.pathsep.join([str(without_langgraph(tmp)), os.environ.get("PYTHONPATH", str(ROOT))])


def started(tmp: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> Iterator[Dev]:
    for name in ("PARLEY_LLM_BASE_URL", "PARLEY_LLM_MODEL", "PARLEY_LLM_API_KEY", "PARLEY_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    dev = Dev(tmp, 0, log_level="INFO")
    try:
        dev.wait_ready()
        wait_for("the banner", lambda: "Metrics: " in dev.output(), dev)
        yield dev
    finally:
        dev.kill()


def wait_for(what: str, check: Callable[[], Any], dev: Dev, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert dev.proc.poll() is None, f"parley dev stopped while waiting for {what}:\n{dev.output()}"
        assert time.monotonic() < deadline, f"no {what}:\n{dev.output()}"
        time.sleep(0.2)
    return found


def page(dev: Dev, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = httpx.post(f"http://127.0.0.1:{dev.port}{path}", json={"user": ALICE, **body}, timeout=30)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def state(dev: Dev) -> dict[str, Any]:
    return dict(httpx.get(f"http://127.0.0.1:{dev.port}/ui/state", params={"user": ALICE}, timeout=10).json())


def slash(dev: Dev, text: str) -> None:
    page(dev, "/ui/message", {"channel": CHANNEL, "text": text})


def ephemeral_after(dev: Dev, text: str) -> str:
    """What `/parley` answers `text` with, shown to the person only."""
    before = len(state(dev)["ephemerals"])
    slash(dev, text)
    return str(wait_for("the reply", lambda: state(dev)["ephemerals"][before:], dev)[-1]["text"])


def thread_message(dev: Dev, has: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    return dict(wait_for(what, lambda: next((m for m in state(dev)["messages"][CHANNEL] if has(m)), None), dev))


def button(message: dict[str, Any], action_id: str) -> tuple[str, dict[str, Any]]:
    for block in message.get("blocks") or []:
        for element in block.get("elements") or []:
            if element.get("action_id") == action_id:
                return block["block_id"], element
    raise AssertionError(f"no {action_id} button in {message}")


def approvals(dev: Dev, mentioning: str) -> list[dict[str, Any]]:
    """The messages with an Approve button that mention `mentioning`."""
    return [
        m for m in state(dev)["messages"][CHANNEL] if mentioning in json.dumps(m) and "parley_approve" in json.dumps(m)
    ]


def approve(dev: Dev, message: dict[str, Any]) -> None:
    block_id, element = button(message, "parley_approve")
    surface = {"kind": "message", "channel": CHANNEL, "ts": message["ts"]}
    body = {"surface": surface, "block_id": block_id, "action_id": "parley_approve", "value": element.get("value")}
    page(dev, "/ui/action", body)


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Dev]:
    """`parley dev` where LangGraph is not installed and a listed agent module raises at import."""
    yield from started(tmp_path, monkeypatch, PYTHONPATH=shim_path(tmp_path), PARLEY_AGENTS="broken_agents")


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Dev]:
    """`parley dev` with no model configured and a cleanup folder to tidy."""
    cleanup = tmp_path / "data-0" / "cleanup"
    (cleanup / "cache").mkdir(parents=True)
    for name in ("notes.txt", "build.tmp", "cache/old.tmp"):
        (cleanup / name).write_text(name)
    yield from started(tmp_path, monkeypatch)


def test_a_missing_extra_and_a_broken_module_are_reported_for_their_agent_and_the_rest_runs(bare: Dev) -> None:
    said = ephemeral_after(bare, "/parley lg_refund A-1001")
    assert "install `parley-slack[langgraph]`" in said and "restart `parley dev`" in said, said
    assert "There is no agent called" not in said
    broken = ephemeral_after(bare, "/parley refunds order 7")
    assert "`broken_agents` failed to load (RuntimeError: OPENAI_API_KEY is not set)" in broken, broken
    assert "agent module failed to load" in bare.output() and "broken_agents" in bare.output()
    slash(bare, "/parley ticket Create ticket for login issue")  # the other agents keep running
    thread_message(bare, lambda m: "Create a ticket" in json.dumps(m) or m.get("thread_ts"), "the ticket's question")
    assert bare.proc.poll() is None, bare.output()

    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # `parley run` where LangGraph is missing
    env.update(PYTHONPATH=shim_path(bare.data_dir.parent), PARLEY_DATA_DIR=str(bare.data_dir))
    done = subprocess.run(
        [sys.executable, "-m", "parley.cli", "run", "lg_refund", "A-1001"],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2 and "install `parley-slack[langgraph]`" in done.stderr, done.stderr


def create_token(dev: Dev, name: str) -> tuple[str, str]:
    """`parley tokens create NAME` as a reader runs it beside `parley dev`: its token and webhook secret."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["PARLEY_DATA_DIR"] = str(dev.data_dir)
    out = subprocess.run(
        [sys.executable, "-m", "parley.cli", "tokens", "create", name],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    values = dict(re.findall(r"^(?:export )?(PARLEY_\w+)=(\S+)$", out, re.MULTILINE))
    return values["PARLEY_TOKEN"], values["PARLEY_WEBHOOK_SECRET"]


def test_loopback_webhooks_on_any_port_and_secret_answers_need_no_settings(offline: Dev) -> None:
    token, _ = create_token(offline, "hooks")
    auth = {"Authorization": f"Bearer {token}"}
    api = f"http://127.0.0.1:{offline.port}/api/v1/questions"
    hooks = Receiver().start()
    try:
        request = {
            "reason": "Ship it?",
            "items": [{"id": "go", "text": "Go?", "type": "select", "options": ["yes", "no"]}],
        }
        created = httpx.post(
            api, json={"request": request, "channel": CHANNEL, "callback_url": hooks.url("q")}, headers=auth
        )
        assert created.status_code == 201, created.text
        asked = wait_for(
            "the question",
            lambda: httpx.get(f"{api}/{created.json()['id']}", headers=auth).json().get("message_ts"),
            offline,
        )
        page(offline, "/ui/message", {"user": "U0BOB", "channel": CHANNEL, "text": "1", "thread_ts": asked})
        [delivery] = wait_for("the webhook", lambda: hooks.deliveries("q"), offline)
        assert json.loads(delivery["body"])["data"]["answers"] == {"go": "yes"}
    finally:
        hooks.stop()

    secret = {"reason": "Deploy?", "items": [{"id": "otp", "text": "One-time code", "type": "secret"}]}
    created = httpx.post(api, json={"request": secret, "channel": CHANNEL}, headers=auth)
    assert created.status_code == 201, created.text
    qid = created.json()["id"]
    ts = wait_for(
        "the secret question", lambda: httpx.get(f"{api}/{qid}", headers=auth).json().get("message_ts"), offline
    )
    assert httpx.get(f"{api}/{qid}", headers=auth).json()["status"] == "waiting"
    asked = thread_message(offline, lambda m: m["ts"] == ts, "the question's message")
    block_id, element = button(asked, "parley_open_form")
    surface = {"kind": "message", "channel": CHANNEL, "ts": asked["ts"]}
    page(
        offline,
        "/ui/action",
        {"surface": surface, "block_id": block_id, "action_id": "parley_open_form", "value": element.get("value")},
    )
    form = wait_for("the modal", lambda: state(offline)["modals"], offline)[-1]
    inputs = {b["block_id"]: {b["element"]["action_id"]: "492817"} for b in form["blocks"] if b["type"] == "input"}
    page(offline, "/ui/view/submit", {"view_id": form["id"], "inputs": inputs})
    answered = wait_for(
        "the answer",
        lambda: (q := httpx.get(f"{api}/{qid}", headers=auth).json())["status"] == "answered" and q,
        offline,
    )
    assert "492817" not in json.dumps(answered)  # sealed with the playground's key, shown masked
    key = offline.data_dir / "playground-secret.key"
    assert key.stat().st_mode & 0o777 == 0o600


def test_pai_invoice_and_oa_cleanup_run_offline_on_the_scripted_model(offline: Dev) -> None:
    assert "Model: a scripted stand-in" in offline.output()
    slash(offline, "/parley pai_invoice Invoice ACME Corp 1200 EUR for March consulting")
    asked = thread_message(
        offline, lambda m: "ACME Corp" in json.dumps(m) and "parley_approve" in json.dumps(m), "the approval"
    )
    approve(offline, asked)
    sent = thread_message(offline, lambda m: "Invoice INV-" in m.get("text", ""), "the invoice's reply")
    assert LABEL in sent["text"] and "1200.00 EUR" in sent["text"] and ":white_check_mark:" in sent["text"]
    [invoice] = [json.loads(line) for line in (offline.data_dir / "invoices" / "outbox.jsonl").read_text().splitlines()]
    assert (invoice["customer"], invoice["amount"], invoice["currency"]) == ("ACME Corp", 1200.0, "EUR")

    slash(offline, "/parley oa_cleanup delete the temporary files")
    deletions = wait_for(
        "two deletions to approve",
        lambda: len(approvals(offline, "delete_file")) >= 2 and approvals(offline, "delete_file"),
        offline,
    )
    for message in deletions:
        approve(offline, message)
    done = thread_message(
        offline, lambda m: "deleted" in m.get("text", "") and LABEL in m.get("text", ""), "the cleanup's reply"
    )
    assert "build.tmp" in done["text"]
    left = sorted(
        p.relative_to(offline.data_dir / "cleanup").as_posix()
        for p in (offline.data_dir / "cleanup").rglob("*")
        if p.is_file()
    )
    assert left == ["notes.txt"]

    slash(offline, "/parley assistant What is on the release list?")  # no script for it: a failure saying why
    failed = thread_message(offline, lambda m: "scripted model drives only" in m.get("text", ""), "the refusal")
    assert failed["text"].startswith(":x: Failed") and "PARLEY_LLM_BASE_URL" in failed["text"], failed["text"]


def client_examples() -> list[str]:
    """docs/api.md's Python client programs for the playground: a block with imports starts one, the rest go on it."""
    programs: list[str] = []
    for block in re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.DOTALL):
        if re.match(r"(import|from) ", block):
            programs.append(block)
        elif programs:
            programs[-1] += block
    return [p for p in programs if "localhost:3000" in p]


def test_the_api_docs_python_examples_name_the_playgrounds_people_and_define_what_they_use() -> None:
    """What api.md's client examples name is there under `parley dev`, as api.md says its commands run as written."""
    from bot.playground.workspace import Workspace

    programs = client_examples()
    assert len(programs) == 2, programs  # Parley's and AsyncParley's
    workspace = Workspace()
    users = {u.id for u in workspace.users()}
    channels = {c.id for c in workspace.channels()}
    for program in programs:
        code = "\n".join(line.split("#", 1)[0] for line in program.splitlines())  # what is run, not comments
        assert set(re.findall(r'\buser="(\w+)"', code)) <= users, program
        assert set(re.findall(r'\bchannel="(\w+)"', code)) <= channels, program
        assert "callback_url=" not in code, program  # the playground posts webhooks only to this machine
        assert undefined_names(program) == set(), program


def undefined_names(program: str) -> set[str]:
    """The names `program` uses that it neither defines, imports nor gets from builtins."""
    top = symtable.symtable(program, "example.py", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    used: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        used |= {s.get_name() for s in table.get_symbols() if s.is_referenced() and (table is top or s.is_global())}
    return used - defined - set(dir(builtins))
