"""What a live `parley serve` answers on which listener, and to whom: `/metrics` on a port of its
own with `--metrics-port`, and `/mcp` only for the `Host` names and browser origins allowed."""

from __future__ import annotations

import httpx
import pytest
from api_support import Token, create_token
from slack_stack import SlackStack, free_port

DESK = "https://desk.example.com"
pytestmark = [
    pytest.mark.system,
    pytest.mark.stack(workers=0, extra_env={"PARLEY_MCP_ALLOWED_ORIGINS": DESK, "PARLEY_API_RATE_LIMIT": "100000"}),
]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}  # fmt: skip


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "listeners")


def test_metrics_port_serves_metrics_apart_and_the_public_port_hides_them(stack: SlackStack) -> None:
    assert stack.http is not None
    assert stack.http.get("/metrics").status_code == 200  # without the flag: on the public port
    public, private = free_port(), free_port()
    stack.spawn_serve("serve-private-metrics", public, "--metrics-port", str(private))
    url = f"http://127.0.0.1:{public}"
    stack.wait_for("the second serve", lambda: _answers(f"{url}/healthz"), timeout=30)
    assert httpx.get(f"{url}/metrics", timeout=5).status_code == 404
    scraped = httpx.get(f"http://127.0.0.1:{private}/metrics", timeout=5)
    assert scraped.status_code == 200 and "parley_runs_paused" in scraped.text


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_mcp_answers_only_allowed_hosts_and_origins(stack: SlackStack, token: Token) -> None:
    assert stack.http is not None
    headers = {"Accept": "application/json, text/event-stream", **token.auth}

    def init(**extra: str) -> int:
        assert stack.http is not None
        return stack.http.post("/mcp", json=INIT, headers={**headers, **extra}).status_code

    port = stack.port
    assert init(Host="evil.example.com") == 421
    assert init(Host=f"evil.example.com:{port}") == 421  # a name rebound to 127.0.0.1
    assert init(Origin="http://evil.example.com") == 403
    assert init(Origin=f"http://127.0.0.1:{port + 1}") == 403  # another page on this machine
    assert init() == 200  # no Origin: any client that is not a browser
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        assert init(Host=host) == 200
    assert init(Origin=DESK) == 200  # PARLEY_MCP_ALLOWED_ORIGINS
