"""The approval gateway in the test process: its real MCP server over the upstream of `mcp_upstream.py`
(a subprocess on the official SDK), asked about through the in-process bolt app and the Web API stand-in.

`Gateway.open` yields the official SDK's `Client` connected to the gateway's server in-process; the
approver's clicks are Slack's signed payloads (`approve`, `edit`, `reject`).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from inprocess_bot import CHANNEL, Bot
from mcp import Client
from mcp.client.client import ConnectMode
from slack_bolt import BoltResponse
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload

from bot.mcp.gateway.server import build_gateway
from bot.mcp.gateway.upstreams import Upstreams
from bot.mcp.rules import RulesConfig, parse_config
from workers.questions import Caller, QuestionService
from workers.questions.waiting import listening
from workers.store.closings import Closings
from workers.store.records import InterruptState

UPSTREAM = Path(__file__).resolve().with_name("mcp_upstream.py")
APPROVER = "U0CAROL"
SECRET = "tok-3f9a-never-shown"


def rules(files: Path, *, extra: str = "", expires_in: int = 900) -> RulesConfig:
    """The rules of most tests: read allowed, `ask_person` denied, `write_file` asked with its token redacted."""
    command = json.dumps([sys.executable, str(UPSTREAM), str(files)])
    text = f"""
upstreams:
  files: {{command: {command}}}
{extra}
channel: {CHANNEL}
assignees: [{APPROVER}]
expires_in: {expires_in}
rules:
  - {{tools: "files.read_*", action: allow}}
  - {{tools: "files.ask_person", action: deny, reason: "nobody is asked from here"}}
  - {{tools: "files.write_file", action: ask, redact: ["token"], allow_standing: true}}
"""
    return parse_config(text, {})


@dataclass
class Gateway:
    bot: Bot
    redis_url: str

    @contextlib.asynccontextmanager
    async def open(
        self,
        config: RulesConfig,
        *,
        session: str = "session-1",
        flat: bool = False,
        progress_every: float = 15.0,
        mode: ConnectMode | None = None,
        backoff: tuple[float, float] = (1.0, 60.0),
    ) -> AsyncIterator[Client]:
        """`mode` None: each upstream's `protocol` in `config` (the handshake unless it says otherwise)."""
        service = QuestionService(self.bot.runtime, closings=Closings(aioredis.Redis.from_url(self.redis_url)))
        caller = Caller("gateway-tests", via="mcp")
        async with listening(service), Upstreams(config, flat=flat, mode=mode, backoff=backoff) as upstreams:
            server = build_gateway(
                service, upstreams, lambda ctx: caller, lambda ctx: session, progress_every=progress_every
            )
            async with Client(server) as client:
                yield client

    # ---- the approver, in Slack ----------------------------------------------------------
    def approval(self) -> dict[str, Any]:
        """The newest approval message whose question is open, once there is one."""

        def found() -> dict[str, Any] | None:
            open_ones = []
            for message in self.bot.ws.messages(CHANNEL):
                for block in message.get("blocks") or []:
                    if block.get("block_id", "").startswith("qa|"):
                        interrupt = self.bot.runtime.store.interrupt(block["block_id"].split("|")[1])
                        if interrupt is not None and interrupt.state is InterruptState.OPEN:
                            open_ones.append(message)
            return open_ones[-1] if open_ones else None

        return self.bot.wait_for("the approval to be posted", found, timeout=20)

    def click(self, message: dict[str, Any], action_id: str) -> None:
        block, button = find_element(message["blocks"], action_id)
        payload = block_actions_payload(
            user=APPROVER,
            message=message,
            channel=CHANNEL,
            action=button_action(block, button),
            trigger=self.bot.ws.issue_trigger(APPROVER),
        )
        assert self.bot.interact(payload).status == 200

    def modal(self, message: dict[str, Any], action_id: str) -> dict[str, Any]:
        before = len(self.bot.ws.open_views(APPROVER))
        self.click(message, action_id)
        self.bot.wait_for("the modal to open", lambda: len(self.bot.ws.open_views(APPROVER)) > before)
        return self.bot.ws.open_views(APPROVER)[-1]

    def submit(self, view: dict[str, Any], fills: dict[str, str]) -> None:
        ack = self.try_submit(view, fills)
        assert (ack.status, ack.body) == (200, ""), ack.body

    def try_submit(self, view: dict[str, Any], fills: dict[str, str]) -> BoltResponse:
        """Slack's signed view_submission of `view` filled with `fills`, and the app's ack of it."""
        state = form_state(view["blocks"], fills)
        return self.bot.interact(view_submission_payload(user=APPROVER, view=view, state_values=state))
