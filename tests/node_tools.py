"""The npm packages the tests run as real processes, where `.ci/run` installs them.

`.ci/run` installs them pinned with `npm install --prefix .ci-node` and exports
`PARLEY_TEST_NODE` naming that directory; locally, run the same `npm install` and export it.
A package that is missing skips its tests with the command that installs it, except under CI
(`CI` set), where a missing package fails them: CI never passes by skipping a real client.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = {
    # the conformance suite needs Node 22; the machine's Node may be older
    "node": ("node@22.23.3", "node/bin/node"),
    "conformance": ("@modelcontextprotocol/conformance@0.1.16", "@modelcontextprotocol/conformance/dist/index.js"),
    "conformance-2026": (  # its preview, with the 2026-07-28 protocol's scenarios, under a name of its own
        "mcp-conformance-2026@npm:@modelcontextprotocol/conformance@0.2.0-alpha.12",
        "mcp-conformance-2026/dist/index.js",
    ),
    "mcp-server-filesystem": (
        "@modelcontextprotocol/server-filesystem@2026.8.31",
        "@modelcontextprotocol/server-filesystem/dist/index.js",
    ),
}
"""Each program the tests run: the pinned package `.ci/run` installs, and its file in `node_modules`."""


def prefix() -> Path:
    """Where the packages are installed: `PARLEY_TEST_NODE`, else the checkout's `.ci-node`."""
    return Path(os.environ.get("PARLEY_TEST_NODE") or ROOT / ".ci-node")


def program(name: str) -> Path:
    """The installed program `name`; skipped (failed under CI) when its package is not installed."""
    package, file = PROGRAMS[name]
    found = prefix() / "node_modules" / file
    if found.exists():
        return found
    install = f"npm install --prefix {prefix()} --save-exact {' '.join(p for p, _ in PROGRAMS.values())}"
    why = f"{name} ({package}) is not installed under {prefix()}: run `{install}`"
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI installs it in .ci/run and never skips this test", pytrace=False)
    pytest.skip(why)


def command(name: str) -> list[str]:
    """How to run the JavaScript program `name`: with the Node installed beside it."""
    return [str(program("node")), str(program(name))]
