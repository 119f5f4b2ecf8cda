"""Real MCP servers nobody here wrote, behind Parley's gateway: the setup and the approver.

`@modelcontextprotocol/server-filesystem` (npm, see `node_tools.py`) serves a temporary
directory and `mcp-server-git` (PyPI, the `test` extra) a temporary repository, each as the
rules file's upstream (`fs` and `git`). Reads are allowed, writes asked in Slack, where the
approver's clicks and the Reject form are Slack's signed payloads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import node_tools
import pytest
import yaml
from gateway_support import APPROVER
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import SlackStack

from workers.store.records import InterruptState
from workers.store.runs import RunStore

CHANNEL = "C0GENERAL"
FIRST_COMMIT = "first commit, made by the test"
RULES = [
    {"tools": "fs.read_*", "action": "allow"},
    {"tools": "fs.list_*", "action": "allow"},
    {"tools": "git.git_log", "action": "allow"},
    {"tools": "git.git_status", "action": "allow"},
    {"tools": "fs.write_file", "action": "ask"},
    {"tools": "git.git_add", "action": "ask"},
    {"tools": "git.git_commit", "action": "ask"},
    {"tools": "*", "action": "deny", "reason": "only reads, writes and commits here"},
]


@dataclass(frozen=True)
class Upstreams:
    """The directory the filesystem server serves, the repository the git server serves, the rules file."""

    files: Path
    repo: Path
    config: Path


def git(repo: Path, *args: str) -> str:
    """`git -C repo args…`, its output."""
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def mcp_server_git() -> Path:
    found = Path(sys.executable).with_name("mcp-server-git")
    if not found.exists():
        pytest.fail(f"mcp-server-git is not installed beside {sys.executable}: pip install -e '.[test]'")
    return found


def prepare(base: Path) -> Upstreams:
    """A directory with one file, a repository with one commit, and the rules file naming both servers."""
    files, repo = (base / "files").resolve(), (base / "repo").resolve()
    files.mkdir()
    (files / "notes.txt").write_text("read me through the gateway\n")
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "tests@example.com")
    git(repo, "config", "user.name", "Parley tests")
    (repo / "README.md").write_text("a repository for the gateway's tests\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", FIRST_COMMIT)
    config = {
        "upstreams": {
            "fs": {"command": [*node_tools.command("mcp-server-filesystem"), str(files)]},
            "git": {"command": [str(mcp_server_git()), "--repository", str(repo)]},
        },
        "channel": CHANNEL,
        "assignees": [APPROVER],
        "expires_in": 900,
        "rules": RULES,
    }
    path = base / "gateway.yml"
    path.write_text(yaml.safe_dump(config))
    return Upstreams(files, repo, path)


# ---- the approver, in Slack --------------------------------------------------------------
def open_approval(stack: SlackStack, marker: str) -> dict[str, Any]:
    """The open approval whose message shows `marker` (a path, a commit message), once it is posted."""
    assert stack.redis is not None
    store = RunStore(stack.redis)

    def posted() -> dict[str, Any] | None:
        for message in stack.ws.messages(CHANNEL):
            blocks = message.get("blocks") or []
            ids = [b["block_id"].split("|")[1] for b in blocks if b.get("block_id", "")[:3] == "qa|"]
            interrupt = store.interrupt(ids[0]) if ids and marker in json.dumps(message) else None
            if interrupt is not None and interrupt.state is InterruptState.OPEN:
                return message
        return None

    return stack.wait_for(f"the approval showing {marker}", posted)


def click(stack: SlackStack, message: dict[str, Any], action_id: str) -> None:
    block, button = find_element(message["blocks"], action_id)
    action = button_action(block, button)
    trigger = stack.ws.issue_trigger(APPROVER)
    payload = block_actions_payload(user=APPROVER, message=message, channel=CHANNEL, action=action, trigger=trigger)
    assert stack.interact(payload).status_code == 200


def approve(stack: SlackStack, marker: str) -> None:
    click(stack, open_approval(stack, marker), "parley_approve")


def reject(stack: SlackStack, marker: str, reason: str) -> None:
    """The approver clicks Reject and gives `reason` in the form it opens."""
    before = len(stack.ws.open_views(APPROVER))
    click(stack, open_approval(stack, marker), "parley_reject")
    stack.wait_for("the Reject form to open", lambda: len(stack.ws.open_views(APPROVER)) > before)
    view = stack.ws.open_views(APPROVER)[-1]
    state = form_state(view["blocks"], {"Reason": reason})
    resp = stack.interact(view_submission_payload(user=APPROVER, view=view, state_values=state))
    assert resp.status_code == 200 and resp.text == "", resp.text
