"""OAuth mode with real processes: `parley serve` (uvicorn) and a `parley worker`, configured by
the environment alone, install two workspaces through the stand-in; each workspace's run posts
with its own token, and B's uninstall cancels B's run while A's waits on. A workspace-bound
API token asks over `/mcp` with its workspace's installation."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from api_support import create_token
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from oauth_stack import OAUTH_ENV, install
from slack_stack import SlackStack

from bot.playground import Channel, User
from workers.store.installations import RedisInstallationStore
from workers.store.records import RunRecord, RunStatus
from workers.store.runs import RunStore

pytestmark = pytest.mark.system

ALPHA, BETA = "T0ALPHA", "T0BETA"


def run_with_text(store: RunStore, text: str) -> RunRecord | None:
    return next((r for r in store.runs(store.list_ids(None)) if r.text == text), None)


@pytest.fixture
def stack(redis_url: str, tmp_path: Path) -> Iterator[SlackStack]:
    stack = SlackStack(redis_url, tmp_path, workers=1, extra_env=dict(OAUTH_ENV))
    stack.ws.add_channel(Channel("C0BETA", "beta"))
    stack.ws.add_user(User("U0BETA", "beta", "Beta Person"))
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def test_two_workspaces_with_real_processes(stack: SlackStack) -> None:
    url = f"http://127.0.0.1:{stack.port}"
    for team in (ALPHA, BETA):
        assert install(url, stack.api_url, team).status == 200
    assert stack.redis is not None
    store, runs_store = RedisInstallationStore(stack.redis), RunStore(stack.redis)
    tokens = {t: store.find_bot(enterprise_id=None, team_id=t).bot_token for t in (ALPHA, BETA)}  # type: ignore[union-attr]

    runs = {}
    for team, channel, user in ((ALPHA, "C0GENERAL", "U0ALICE"), (BETA, "C0BETA", "U0BETA")):
        text = secrets.token_hex(4)
        assert stack.command(f"s-pick {text}", user=user, channel=channel, team=team).status_code == 200
        question = stack.wait_call(
            "chat.postMessage", lambda c, ch=channel: c["args"].get("channel") == ch and bool(c["args"].get("blocks"))
        )
        assert question["token"] == tokens[team]
        runs[team] = stack.wait_for("the run", lambda t=text: run_with_text(runs_store, t))
    posts = stack.calls("chat.postMessage")
    assert {(c["args"]["channel"], c["token"]) for c in posts} == {
        ("C0GENERAL", tokens[ALPHA]),
        ("C0BETA", tokens[BETA]),
    }

    stack.ws.installs.uninstall(BETA)
    assert stack.event({"type": "app_uninstalled", "event_ts": "1700000000.000100"}, team=BETA).status_code == 200
    stack.wait_for("B's run to be cancelled", lambda: stack.status(runs[BETA].id) == RunStatus.CANCELLED.value)
    assert store.find_bot(enterprise_id=None, team_id=BETA) is None
    assert stack.status(runs[ALPHA].id) == RunStatus.PAUSED.value
    [entry] = [h for h in runs_store.history(runs[BETA].id) if h.event == "cancelled"]
    assert entry.by == "slack:app_uninstalled"


def test_a_workspace_bound_token_asks_over_mcp_with_its_workspaces_installation(stack: SlackStack) -> None:
    assert install(f"http://127.0.0.1:{stack.port}", stack.api_url, ALPHA).status == 200
    assert stack.redis is not None
    alpha_bot = RedisInstallationStore(stack.redis).find_bot(enterprise_id=None, team_id=ALPHA)
    assert alpha_bot is not None
    token = create_token(stack, "oauth-agent", "ask", team=ALPHA)
    args = {
        "questions": [{"id": "go", "header": "Go", "question": "Go ahead?", "type": "single",
                       "options": [{"label": "Yes"}, {"label": "No"}]}],
        "channel": "C0GENERAL",
        "wait_seconds": 0,
    }  # fmt: skip

    async def ask() -> CallToolResult:
        http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(30, read=60))
        async with Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp", http_client=http)) as client:
            return await client.call_tool("ask_human", args)

    called = anyio.run(ask)
    assert not called.is_error, called.content
    assert called.structured_content is not None and called.structured_content["status"] == "waiting"
    posted = stack.wait_call("chat.postMessage", lambda c: "Go ahead?" in str(c["args"].get("blocks")))
    assert posted["token"] == alpha_bot.bot_token and posted["args"]["channel"] == "C0GENERAL"
