"""What the playground keeps between requests: response URLs, deliveries, the page's state.

The page's routes (``ui.py``) and the app (``app.py``) both hold a `Playground`.
"""

from __future__ import annotations

import collections
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from bot.playground import agent_methods
from bot.playground.blockstate import with_ids
from bot.playground.slack_sender import Delivery, SlackSender
from bot.playground.workspace import Workspace

STATIC = Path(__file__).resolve().parent / "static"
RESPONSE_URL_USES = 5
RESPONSE_URL_TTL = 30 * 60
SLOW_ACK = 3.0
"""Slack shows an error when an app takes longer than this to acknowledge."""


def _with_ids(item: dict[str, Any] | None) -> dict[str, Any] | None:
    """A message or view with the block and action ids Slack would fill in."""
    return None if item is None else {**item, "blocks": with_ids(item.get("blocks"))}


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() == "true"


class Playground:
    """The page's server-side state: workspace, sender, response URLs, delivery log."""

    def __init__(self, ws: Workspace, sender: SlackSender, *, commands: tuple[str, ...] = ("/parley",)) -> None:
        self.ws = ws
        self.sender = sender
        self.commands = commands
        self.deliveries: collections.deque[dict[str, Any]] = collections.deque(maxlen=50)
        self._hooks: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def hook(self, base_url: str, **context: Any) -> str:
        """A fresh ``response_url`` that posts back into ``context`` (user, channel, thread/message)."""
        token = secrets.token_urlsafe(18)
        with self._lock:
            self._hooks[token] = {**context, "uses": 0, "at": time.time()}
        return f"{base_url.rstrip('/')}/hooks/{token}"

    def claim_hook(self, token: str) -> dict[str, Any] | str:
        """The context of a ``response_url``, or Slack's error for it (``expired_url``, ``used_url``)."""
        with self._lock:
            ctx = self._hooks.get(token)
            if ctx is None or time.time() - ctx["at"] > RESPONSE_URL_TTL:
                return "expired_url"
            if ctx["uses"] >= RESPONSE_URL_USES:
                return "used_url"
            ctx["uses"] += 1
            return dict(ctx)

    def record(self, delivery: Delivery, summary: str) -> None:
        """Log one request to the bot for the page's request log."""
        entry = {"kind": delivery.kind, "status": delivery.status, "ms": round(delivery.elapsed * 1000)}
        entry.update(summary=summary[:200], error=delivery.error, at=delivery.at, slow=delivery.elapsed > SLOW_ACK)
        with self._lock:
            self.deliveries.append(entry)

    def snapshot(self, user: str) -> dict[str, Any]:
        """Everything the page shows ``user``.

        That is channels and threads, ephemerals, modals, Home and the request log.
        """
        ws = self.ws
        events = ws.events  # read first: a change while reading shows up again on the next poll
        channels = [{"id": c.id, "name": c.name} for c in ws.channels()]
        people = [
            {"id": u.id, "name": u.name, "real_name": u.real_name or u.name, "is_admin": u.is_admin, "is_bot": u.is_bot}
            for u in ws.users()
        ]
        dm = "D" + user[1:]
        with self._lock:
            deliveries = list(self.deliveries)
        return {
            "events": events,
            "team": {"id": ws.team_id, "name": ws.team_name, "domain": ws.team_domain},
            "me": user,
            "bot_user_id": ws.bot_user_id,
            "users": people,
            "channels": channels,
            "usergroups": [{"id": g.id, "handle": g.handle, "users": list(g.users)} for g in ws.usergroups()],
            "messages": {c["id"]: [_with_ids(m) for m in ws.messages(c["id"])] for c in channels},
            "dm": {"id": dm, "messages": [_with_ids(m) for m in ws.messages(dm)]},
            "ephemerals": [_with_ids(e) for e in ws.ephemerals(user)],
            "modals": [_with_ids(v) for v in ws.open_views(user)],
            "home": _with_ids(ws.home(user)),
            "deliveries": deliveries,
            "permalink_base": ws.permalink_base,
            "sessions": agent_methods.sessions_shown(ws),
            "streamed": sorted(ws.agents.streams),
        }

    def apply_response(self, ctx: dict[str, Any], body: dict[str, Any]) -> None:
        """Apply a message response: a slash command's ack body, or a ``response_url`` post.

        ``ctx`` holds ``user``, ``channel`` and an optional ``thread_ts``. For message actions, it adds
        the source ``message_ts`` and ``ephemeral``. The response is ephemeral unless ``response_type``
        is in_channel.
        """
        ws, user, channel = self.ws, ctx["user"], ctx["channel"]
        text, blocks = body.get("text"), body.get("blocks")
        source = ctx.get("message_ts")
        if source and (_truthy(body.get("delete_original")) or _truthy(body.get("replace_original"))):
            delete = _truthy(body.get("delete_original"))
            if ctx.get("ephemeral"):
                ws.edit_ephemeral(user, source, text, blocks, delete=delete)
            elif delete:
                ws.delete_message(channel, source)
            else:
                ws.update_message(channel, source, text, blocks if blocks is not None else [])
            return
        if not text and not blocks:
            return
        thread_ts = body.get("thread_ts") or ctx.get("thread_ts")
        if body.get("response_type") == "in_channel":
            ws.post_message(channel, str(text or ""), blocks, thread_ts=thread_ts)
        else:
            ws.post_ephemeral(channel, user, str(text or ""), blocks, thread_ts=thread_ts)
