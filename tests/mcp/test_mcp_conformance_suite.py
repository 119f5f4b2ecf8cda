"""The official MCP conformance suite (`@modelcontextprotocol/conformance`) against Parley's MCP over HTTP.

Its server scenarios run as the suite's own process against `/mcp` and `/mcp/gateway` of a live
`parley serve` (the gateway in front of the real filesystem and git servers, `real_upstreams.py`).
The suite's client sends no bearer token, so it talks to a loopback forwarder that adds one, as a
host's configuration would. Every scenario the suite runs is either one that applies to a
tools-only server, and must pass with no failed check, or is listed below with the reason it
does not apply; a scenario a new version adds fails the test until it is placed. The suite's
preview release adds scenarios of the 2026-07-28 protocol (`PREVIEW`), run one by one.

Parley answers no browser `Origin` by default (docs/configuration.md); the suite's
`dns-rebinding-protection` expects a loopback page to be let in, so the server here allows the
loopback origins through `PARLEY_MCP_ALLOWED_ORIGINS`, as an operator who wants that would.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import node_tools
import pytest
from api_support import create_token
from real_upstreams import Upstreams, prepare
from slack_stack import SlackStack
from stacks import Stacks
from starlette.types import ASGIApp, Receive, Scope, Send

from bot.api.errors import problem
from bot.playground import LoopbackServer
from bot.playground.forward import ForwardToBot

pytestmark = pytest.mark.system

APPLIES = {
    "server-initialize": "the initialize handshake",
    "ping": "ping",
    "tools-list": "tools/list",
    "server-sse-multiple-streams": "several POST streams at once in one session",
    "dns-rebinding-protection": "Host and Origin checks against DNS rebinding",
}
"""The scenarios that apply to a tools-only server over streamable HTTP."""

FIXTURE_TOOLS = "calls a tool of the suite's reference server by name ({}), which no other server defines"
DOES_NOT_APPLY = {
    "logging-set-level": "Parley declares no `logging` capability, so -32601 is the spec's answer",
    "completion-complete": "completions fill prompt and resource arguments; Parley serves tools only",
    **{
        f"tools-call-{kind}": FIXTURE_TOOLS.format(f"test_{kind.replace('-', '_')}")
        for kind in ("simple-text", "image", "audio", "embedded-resource", "mixed-content", "with-logging")
    },
    "tools-call-error": FIXTURE_TOOLS.format("test_error_handling"),
    "tools-call-with-progress": FIXTURE_TOOLS.format("test_tool_with_progress"),
    "tools-call-sampling": FIXTURE_TOOLS.format("test_sampling"),
    "tools-call-elicitation": FIXTURE_TOOLS.format("test_elicitation"),
    "elicitation-sep1034-defaults": FIXTURE_TOOLS.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": FIXTURE_TOOLS.format("test_elicitation_sep1330_enums"),
    "server-sse-polling": FIXTURE_TOOLS.format("test_reconnection"),
    "json-schema-2020-12": FIXTURE_TOOLS.format("json_schema_2020_12_tool"),
    **{
        f"resources-{name}": "Parley serves tools only, no resources"
        for name in ("list", "read-text", "read-binary", "templates-read", "subscribe", "unsubscribe")
    },
    **{
        f"prompts-{name}": "Parley serves tools only, no prompts"
        for name in ("list", "get-simple", "get-with-args", "get-embedded-resource", "get-with-image")
    },
}
"""The suite's server scenarios that do not apply to Parley, and why."""

STATELESS = {
    "server-sse-multiple-streams": "/mcp/gateway keeps no sessions; the scenario needs one",
    "server-session-lifecycle": "/mcp/gateway keeps no sessions; the scenario needs one",
}
"""Scenarios that do not apply to the gateway's endpoint alone."""

PREVIEW = {
    "server-stateless": "2026-07-28: each request stands alone, with its version and capabilities in it",
    "http-header-validation": "2026-07-28: the Mcp-Method and Mcp-Name headers checked against the body",
    "input-required-result-unsupported-methods": "2026-07-28: no input requests where the method allows none",
    "server-session-lifecycle": "sessions: Mcp-Session-Id issued, required, ended by DELETE",
}
"""Scenarios of the suite's preview release (`conformance-2026`) that its stable release lacks, all applying.
Its checks that need the reference server's own tools say so (`untestable`) and do not count."""


class WithToken:
    """ASGI middleware: every request carries `token` as its bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = [h for h in scope["headers"] if h[0] != b"authorization"]
            scope = {**scope, "headers": [*headers, (b"authorization", f"Bearer {self.token}".encode())]}
        await self.app(scope, receive, send)


async def elsewhere(scope: Scope, receive: Receive, send: Send) -> None:
    await problem(404, "Not forwarded", "only /mcp is forwarded")(scope, receive, send)


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Upstreams:
    return prepare(tmp_path_factory.mktemp("conformance-upstreams"))


@pytest.fixture(scope="module")
def stack(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, upstreams: Upstreams, stacks: Stacks
) -> Iterator[SlackStack]:
    loopback = "http://127.0.0.1:*,http://localhost:*,http://[::1]:*"
    env = {"PARLEY_MCP_CONFIG": str(upstreams.config), "PARLEY_MCP_ALLOWED_ORIGINS": loopback}
    yield stacks(redis_url=redis_url, workers=1, extra_env=env)


@pytest.fixture(scope="module")
def forwarder(stack: SlackStack) -> Iterator[str]:
    """The loopback forwarder's base URL: each request on to `parley serve` with a token of scope `ask`."""
    token = create_token(stack, "conformance-suite", rate_limit=10_000)  # the suite sends a few hundred requests
    app = WithToken(ForwardToBot(elsewhere, f"http://127.0.0.1:{stack.port}"), token.token)
    server = LoopbackServer(app).start()
    try:
        yield server.url
    finally:
        server.stop()


def run_suite(url: str, out: Path, suite: str = "conformance", *scenario: str) -> dict[str, list[dict[str, Any]]]:
    """The suite's default server scenarios (or `--scenario NAME`) against `url`: each one's checks, by name."""
    argv = [*node_tools.command(suite), "server", "--url", url, "--output-dir", str(out), *scenario]
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    results = {}
    for checks in out.glob("server-*/checks.json"):
        scenario = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks.parent.name.removeprefix("server-"))
        results[scenario] = json.loads(checks.read_text())
    assert results, f"the suite ran no scenario (exit {ran.returncode})\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    return results


def failures(checks: list[dict[str, Any]]) -> list[str]:
    """The failed checks, less those the suite marks untestable (they need its reference server's own tools)."""
    failed = [c for c in checks if c["status"] == "FAILURE" and not (c.get("details") or {}).get("untestable")]
    return [f"{c['id']}: {c.get('errorMessage')}" for c in failed]


@pytest.mark.parametrize("path", ["/mcp", "/mcp/gateway"])
def test_the_scenarios_that_apply_pass_and_the_rest_are_accounted_for(
    path: str, forwarder: str, stack: SlackStack, tmp_path: Path
) -> None:
    results = run_suite(forwarder + path, tmp_path)
    skipped = {**DOES_NOT_APPLY, **(STATELESS if path == "/mcp/gateway" else {})}

    unplaced = set(results) - set(APPLIES) - set(skipped)
    assert not unplaced, f"scenarios neither applied nor explained: {sorted(unplaced)}"
    applied = {name: checks for name, checks in results.items() if name not in skipped}
    assert set(applied) == set(APPLIES) - set(skipped), sorted(applied)
    failed = {name: failures(checks) for name, checks in applied.items() if failures(checks)}
    assert not failed, f"{json.dumps(failed, indent=1)}\n{stack.logs()}"
    assert all(any(c["status"] == "SUCCESS" for c in checks) for checks in applied.values()), applied


PREVIEW_RUNS = [(p, s) for p in ("/mcp", "/mcp/gateway") for s in sorted(PREVIEW) if p == "/mcp" or s not in STATELESS]


@pytest.mark.parametrize(("path", "scenario"), PREVIEW_RUNS)
def test_the_preview_suites_scenarios_that_apply_pass(
    path: str, scenario: str, forwarder: str, stack: SlackStack, tmp_path: Path
) -> None:
    results = run_suite(forwarder + path, tmp_path, "conformance-2026", "--scenario", scenario)
    assert set(results) == {scenario}
    checks = results[scenario]
    assert not failures(checks), f"{json.dumps(failures(checks), indent=1)}\n{stack.logs()}"
    assert sum(c["status"] == "SUCCESS" for c in checks) >= 2, checks
