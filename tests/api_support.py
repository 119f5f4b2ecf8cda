"""Helpers for the HTTP API's tests: tokens made with the real CLI, a webhook receiver, requests.

The receiver is a loopback Starlette app (served by `LoopbackServer`) that records every
delivery with its headers and answers with the next status of a script (500, 500, 200…).
"""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx
from slack_stack import PARLEY, SlackStack
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bot.playground import LoopbackServer


@dataclass(frozen=True)
class Token:
    name: str
    token: str
    secret: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def create_token(
    stack: SlackStack,
    name: str,
    *scopes: str,
    rate_limit: int | None = None,
    team: str | None = None,
    temporal: tuple[str, ...] = (),
    open_questions: int | None = None,
) -> Token:
    """`parley tokens create NAME [--scope …] [--team T…] [--temporal GLOB …] [--open-questions N]`, run as an
    operator would, and its printed token and secret."""
    argv = [str(PARLEY), "tokens", "create", name, *(a for s in scopes for a in ("--scope", s))]
    argv += [a for glob in temporal for a in ("--temporal", glob)]
    if rate_limit is not None:
        argv += ["--rate-limit", str(rate_limit)]
    if team is not None:
        argv += ["--team", team]
    if open_questions is not None:
        argv += ["--open-questions", str(open_questions)]
    out = subprocess.run(argv, env=stack.env(), capture_output=True, text=True, timeout=30, check=True).stdout
    values = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines() if "=" in line)
    return Token(name, values["PARLEY_TOKEN"], values["PARLEY_WEBHOOK_SECRET"])


def revoke_token(stack: SlackStack, name: str) -> None:
    """`parley tokens revoke NAME`, as an operator would run it."""
    argv = [str(PARLEY), "tokens", "revoke", name]
    subprocess.run(argv, env=stack.env(), capture_output=True, text=True, timeout=30, check=True)


def from_address(address: str, base_url: str) -> httpx.Client:
    """An HTTP client whose connections come from `address` (any of 127.0.0.0/8 reaches a loopback server),
    so that what a server counts per client address is this client's alone."""
    return httpx.Client(base_url=base_url, transport=httpx.HTTPTransport(local_address=address), timeout=15)


DECISION = {"id": "decision", "text": "Decision", "type": "select", "options": ["approve", "reject"]}
NOTE = {"id": "note", "text": "Note", "type": "free_text", "required": False}


def approval(reason: str, *, note: bool = True, **request: Any) -> dict[str, Any]:
    """A Request as `workers.interaction.Request` serialises: approve or reject, and an optional note
    (a form with a Submit button); without the note, one select answered with one click."""
    return {"reason": reason, "items": [DECISION, NOTE] if note else [DECISION], **request}


@dataclass
class Receiver:
    """Webhook endpoints on 127.0.0.1 (`/hook/<name>`), each answering with its script of statuses in
    turn (then the last one forever; 200 for a name with no script)."""

    scripts: dict[str, list[int]] = field(default_factory=dict)
    got: list[dict[str, Any]] = field(default_factory=list)
    server: LoopbackServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def _hook(self, request: Request) -> Response:
        body = (await request.body()).decode()
        name = request.path_params["name"]
        with self._lock:
            n = len([g for g in self.got if g["name"] == name])
            self.got.append({"headers": dict(request.headers), "body": body, "name": name})
            script = self.scripts.get(name, [200])
            status = script[min(n, len(script) - 1)]
        return Response(status_code=status)

    def start(self) -> Receiver:
        app = Starlette(routes=[Route("/hook/{name}", self._hook, methods=["POST"])])
        self.server = LoopbackServer(app).start()
        return self

    def url(self, name: str) -> str:
        assert self.server is not None
        return f"{self.server.url}/hook/{name}"

    def deliveries(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [g for g in self.got if g["name"] == name]

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
