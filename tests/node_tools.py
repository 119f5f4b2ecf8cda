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
PACKAGES = {
    "node": "node@22.23.3",  # the conformance suite needs Node 22; the machine's Node may be older
    "conformance": "@modelcontextprotocol/conformance@0.1.16",
    "mcp-server-filesystem": "@modelcontextprotocol/server-filesystem@2026.8.31",
}
"""Each program the tests run, and the pinned package that provides it (as `.ci/run` installs it)."""


def prefix() -> Path:
    """Where the packages are installed: `PARLEY_TEST_NODE`, else the checkout's `.ci-node`."""
    return Path(os.environ.get("PARLEY_TEST_NODE") or ROOT / ".ci-node")


def bin_dir() -> Path:
    return prefix() / "node_modules" / ".bin"


def program(name: str) -> Path:
    """The installed program `name`; skipped (failed under CI) when its package is not installed."""
    found = bin_dir() / name
    if found.exists():
        return found
    install = f"npm install --prefix {prefix()} {' '.join(PACKAGES.values())}"
    why = f"{name} ({PACKAGES[name]}) is not installed under {prefix()}: run `{install}`"
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI installs it in .ci/run and never skips this test", pytrace=False)
    pytest.skip(why)


def env() -> dict[str, str]:
    """The environment with the packages' programs (and their Node) first on `PATH`."""
    program("node")
    return {**os.environ, "PATH": f"{bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
