"""The real Claude Code for the tests: the `claude` binary from npm, its model replaced by a script.

`.ci/run` installs `@anthropic-ai/claude-code` (a pinned version) into `.ci-node/`; a test finds
the binary there, or at `PARLEY_TEST_CLAUDE`, and skips without it, except on CI (`CI` set),
where a missing binary fails the test. `ClaudeCode.run` starts `claude` exactly as the doc's
command line says, in a directory of its own, with a home of its own and the scripted Messages
API (`anthropic_standin`) as its model; it never reaches the internet.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from anthropic_standin import MessagesAPI
from claude_code_support import PLACEHOLDERS, doc_server, fenced
from slack_stack import PARLEY, SlackStack

ROOT = Path(__file__).resolve().parents[1]
NODE_TOOLS = Path(os.environ.get("PARLEY_TEST_NODE_TOOLS") or ROOT / ".ci-node")
"""Where `.ci/run` installs the npm packages the tests run."""


def node_tool(what: str, path: Path) -> Path:
    """`path` if it exists; otherwise a skip saying how to install it, or a failure on CI."""
    if path.exists():
        return path
    reason = f"{what} is not installed at {path}: run .ci/run, or install it as .ci/run does"
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run this test)")
    pytest.skip(reason)


def claude_binary() -> Path:
    given = os.environ.get("PARLEY_TEST_CLAUDE")
    return node_tool("Claude Code", Path(given) if given else NODE_TOOLS / "node_modules" / ".bin" / "claude")


def doc_command() -> list[str]:
    """The doc's `claude -p --mcp-config parley.json --permission-prompt-tool ...` command, split."""
    [line] = [line for block in fenced("bash") for line in block.splitlines() if line.startswith("claude ")]
    return shlex.split(line)


@dataclass
class ClaudeCode:
    """One `claude -p` run in `workdir` against the stack's Redis and Slack; its output in `workdir`."""

    stack: SlackStack
    api: MessagesAPI
    workdir: Path

    def server_config(self, name: str, command: str, args: list[str], env: dict[str, str]) -> Path:
        """Write an MCP configuration naming one stdio server, as Claude Code reads `--mcp-config`."""
        path = self.workdir / f"{name}.json"
        path.write_text(json.dumps({"mcpServers": {name: {"command": command, "args": args, "env": env}}}))
        return path

    def doc_setup(self, rules: str) -> None:
        """`rules.yml` and the doc's `parley.json`, its placeholders replaced by the stack's values."""
        (self.workdir / "rules.yml").write_text(rules)
        server = doc_server()
        env = {**server["env"], **{key: self.stack.env()[key] for key in PLACEHOLDERS}}
        self.server_config("parley", server["command"], server["args"], env)

    def env(self) -> dict[str, str]:
        home = self.workdir / "home"
        home.mkdir(exist_ok=True)
        return {
            **self.stack.env(),
            "PATH": f"{PARLEY.parent}:{os.environ.get('PATH', '')}",  # `parley`, as the doc names it
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": self.api.url,
            "ANTHROPIC_API_KEY": "test",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "ENABLE_TOOL_SEARCH": "false",  # MCP tools are offered to the model directly
            "MCP_TIMEOUT": "60000",  # milliseconds an MCP server may take to start, on a busy machine
        }

    def start(self, argv: list[str]) -> subprocess.Popen[bytes]:
        """Start `claude` with `argv` (the first word, `claude`, is the installed binary)."""
        out = (self.workdir / "claude.log").open("wb")
        return subprocess.Popen(
            [str(claude_binary()), *argv[1:]], cwd=self.workdir, env=self.env(), stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip

    def finish(self, proc: subprocess.Popen[bytes], timeout: float = 120) -> str:
        """Wait for `claude` to end; its output, after checking it ended well."""
        try:
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
        output = (self.workdir / "claude.log").read_text(errors="replace")
        assert proc.returncode == 0, f"claude exited with {proc.returncode}:\n{output}\n{self.stack.logs()}"
        assert self.api.problems == [], self.api.problems
        return output

    def run(self, argv: list[str], timeout: float = 120) -> str:
        return self.finish(self.start(argv), timeout)


def offered(body: dict[str, Any], suffix: str) -> str:
    """The name Claude Code offered the model for the tool whose name ends with `suffix`."""
    [name] = [tool["name"] for tool in body.get("tools") or [] if str(tool["name"]).endswith(suffix)]
    return str(name)
