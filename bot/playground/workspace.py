"""In-memory Slack workspace behind the Web API stand-in.

Tests and the local playground need a Slack they fully control: who is an
admin, which channels exist, what the bot posted where, and which API calls it
made. ``Workspace`` holds that state behind one re-entrant lock, so the
uvicorn thread that serves the API and the test thread that inspects it never
see half-applied changes. Every mutation bumps ``events`` and notifies
``changed`` so live views (the playground UI, polling tests) can block until
something happens instead of sleeping.
"""

from __future__ import annotations

import copy
import itertools
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

TEAM_ID = "T0PARLEY"
TEAM_NAME = "Parley Playground"
BOT_USER_ID = "U0PARLEYBOT"
BOT_ID = "B0PARLEYBOT"
APP_ID = "A0PARLEY"


@dataclass(frozen=True)
class User:
    """A workspace member, rendered in the shape of ``users.info``."""

    id: str
    name: str
    real_name: str = ""
    is_admin: bool = False
    is_bot: bool = False

    def to_slack(self, team_id: str) -> dict[str, Any]:
        """Return the user object Slack sends from ``users.info``."""
        real = self.real_name or self.name.title()
        profile = {"real_name": real, "display_name": self.name, "team": team_id}
        flags = dict.fromkeys(("deleted", "is_primary_owner", "is_restricted", "is_ultra_restricted"), False)
        return {
            **dict(id=self.id, team_id=team_id, name=self.name, real_name=real, profile=profile, **flags),
            **dict(tz="Etc/UTC", tz_label="Coordinated Universal Time", tz_offset=0, updated=0),
            **dict(is_admin=self.is_admin, is_owner=self.is_admin, is_bot=self.is_bot, is_app_user=False),
        }


@dataclass(frozen=True)
class Channel:
    """A public channel the bot may post to."""

    id: str
    name: str


@dataclass(frozen=True)
class Fault:
    """What the Web API must do instead of (or before) serving one call."""

    status: int = 200
    error: str | None = None
    retry_after: int | None = None
    delay: float = 0.0

    @property
    def fails(self) -> bool:
        """True when the call must be answered with an error, not served."""
        return self.status != 200 or self.error is not None


class FaultPlan:
    """Queued failures and delays, consumed one call at a time per method.

    Rules apply in the order they were queued; ``method="*"`` matches any method.
    """

    def __init__(self) -> None:
        self._rules: list[list[Any]] = []  # [method, Fault, remaining]
        self._lock = threading.Lock()

    def fail_next(
        self, method: str, status: int = 429, retry_after: int | None = 1, times: int = 1, error: str | None = None
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with ``status``.

        429 responses carry ``Retry-After`` and ``ratelimited``; other statuses
        default to ``internal_error``. ``status=200`` with ``error`` injects a
        Slack-level error such as ``channel_not_found``.
        """
        error = error or ("ratelimited" if status == 429 else "internal_error")
        fault = Fault(status, error, retry_after if status == 429 else None)
        with self._lock:
            self._rules.append([method, fault, times])

    def delay_next(self, method: str, seconds: float, times: int = 1) -> None:
        """Hold the next ``times`` calls of ``method`` for ``seconds``, then serve them normally."""
        with self._lock:
            self._rules.append([method, Fault(delay=seconds), times])

    def take(self, method: str) -> Fault | None:
        """Consume one use of the first rule matching ``method`` and return its fault, if any."""
        with self._lock:
            for i, rule in enumerate(self._rules):
                if rule[0] in (method, "*"):
                    rule[2] -= 1
                    if rule[2] <= 0:
                        del self._rules[i]
                    return rule[1]
        return None

    def clear(self) -> None:
        """Drop every pending rule."""
        with self._lock:
            self._rules.clear()


class Workspace:
    """Thread-safe state of one fake Slack team: users, channels, messages, views, calls."""

    def __init__(self, team_id: str = TEAM_ID, team_name: str = TEAM_NAME) -> None:
        self.team_id = team_id
        self.team_name = team_name
        self.bot_user_id = BOT_USER_ID
        self.bot_id = BOT_ID
        self.app_id = APP_ID
        self.faults = FaultPlan()
        #: URL returned by ``apps.connections.open``; ``None`` derives one from the request host.
        self.socket_mode_url: str | None = None
        #: Base for ``chat.getPermalink``; ``None`` uses the URL the request arrived on.
        self.permalink_base: str | None = None
        self._lock = threading.RLock()
        self.changed = threading.Condition(self._lock)
        self._events = 0
        self._last_us = 0
        self._view_seq = itertools.count(1)
        self._users: dict[str, User] = {}
        self._channels: dict[str, Channel] = {}
        self._messages: dict[str, list[dict[str, Any]]] = {}
        self._ephemerals: dict[str, list[dict[str, Any]]] = {}
        self._views: dict[str, dict[str, Any]] = {}
        self._view_owner: dict[str, str] = {}
        self._homes: dict[str, dict[str, Any]] = {}
        self._triggers: dict[str, str | None] = {}
        self._calls: list[dict[str, Any]] = []
        for user in (
            User("U0ALICE", "alice", "Alice Admin", is_admin=True),
            User("U0BOB", "bob", "Bob"),
            User("U0CAROL", "carol", "Carol"),
            User(BOT_USER_ID, "parley", "Parley", is_bot=True),
        ):
            self.add_user(user)
        self.add_channel(Channel("C0GENERAL", "general"))
        self.add_channel(Channel("C0OPS", "ops"))

    # -- change notification -------------------------------------------------

    @property
    def events(self) -> int:
        """Monotonic change counter; compare with an earlier value to detect updates."""
        with self._lock:
            return self._events

    def wait_for_change(self, since: int, timeout: float | None = None) -> int:
        """Block until ``events`` exceeds ``since`` (or ``timeout``); return the current counter."""
        with self.changed:
            self.changed.wait_for(lambda: self._events > since, timeout)
            return self._events

    def _bump(self) -> None:
        self._events += 1
        self.changed.notify_all()

    def next_ts(self) -> str:
        """Return a unique, strictly increasing Slack ``ts`` ("seconds.micros")."""
        with self._lock:
            self._last_us = max(int(time.time() * 1_000_000), self._last_us + 1)
            seconds, micros = divmod(self._last_us, 1_000_000)
            return f"{seconds}.{micros:06d}"

    # -- directory -----------------------------------------------------------

    def add_user(self, user: User) -> None:
        """Add or replace a member."""
        with self._lock:
            self._users[user.id] = user
            self._bump()

    def add_channel(self, channel: Channel) -> None:
        """Add or replace a channel."""
        with self._lock:
            self._channels[channel.id] = channel
            self._messages.setdefault(channel.id, [])
            self._bump()

    def user(self, user_id: str) -> User | None:
        """Look a member up by id."""
        with self._lock:
            return self._users.get(user_id)

    def resolve_channel(self, ref: str) -> str | None:
        """Map a channel id, ``name``/``#name``, or a user id (a DM) to a channel id."""
        with self._lock:
            if ref in self._channels:
                return ref
            name = ref.removeprefix("#")
            for channel in self._channels.values():
                if channel.name == name:
                    return channel.id
            if ref in self._users:
                dm = "D" + ref[1:]
                self._messages.setdefault(dm, [])
                return dm
            if ref.startswith("D") and ref in self._messages:
                return ref
            return None

    # -- messages ------------------------------------------------------------

    def post_message(
        self,
        channel: str,
        text: str = "",
        blocks: list[Any] | None = None,
        *,
        user: str | None = None,
        thread_ts: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Append a message (by the bot unless ``user`` is given) and return a copy of it."""
        with self._lock:
            author = user or self.bot_user_id
            msg: dict[str, Any] = {"type": "message", "user": author, "text": text, "ts": self.next_ts()}
            msg["team"] = self.team_id
            if author == self.bot_user_id:
                msg.update(bot_id=self.bot_id, app_id=self.app_id)
            if blocks:
                msg["blocks"] = copy.deepcopy(blocks)
            msg.update({k: v for k, v in extra.items() if v is not None})
            root = self._find(channel, thread_ts) if thread_ts else None
            if thread_ts:
                if root is not None and root.get("thread_ts", root["ts"]) != root["ts"]:
                    thread_ts = root["thread_ts"]  # a reply's ts threads under its parent
                    root = self._find(channel, thread_ts)
                msg["thread_ts"] = thread_ts
                if root is not None:
                    msg["parent_user_id"] = root["user"]
                    root["thread_ts"] = root["ts"]
                    root["reply_count"] = root.get("reply_count", 0) + 1
                    root["latest_reply"] = msg["ts"]
                    root["reply_users"] = sorted({*root.get("reply_users", []), author})
            self._messages.setdefault(channel, []).append(msg)
            self._bump()
            return copy.deepcopy(msg)

    def update_message(
        self, channel: str, ts: str, text: str | None = None, blocks: list[Any] | None = None
    ) -> dict[str, Any] | None:
        """Edit a message in place; ``blocks=None`` keeps the old blocks, ``[]`` removes them."""
        with self._lock:
            msg = self._find(channel, ts)
            if msg is None:
                return None
            if text is not None:
                msg["text"] = text
            if blocks is not None:
                msg["blocks"] = copy.deepcopy(blocks)
            msg["edited"] = {"user": self.bot_user_id, "ts": self.next_ts()}
            self._bump()
            return copy.deepcopy(msg)

    def post_ephemeral(
        self, channel: str, user: str, text: str = "", blocks: list[Any] | None = None, thread_ts: str | None = None
    ) -> str:
        """Record a message only ``user`` sees in ``channel``; return its ``message_ts``."""
        with self._lock:
            ts = self.next_ts()
            msg = {"type": "message", "channel": channel, "user": user, "text": text, "ts": ts}
            msg.update({k: v for k, v in (("blocks", copy.deepcopy(blocks)), ("thread_ts", thread_ts)) if v})
            self._ephemerals.setdefault(user, []).append(msg)
            self._bump()
            return ts

    def _find(self, channel: str, ts: str | None) -> dict[str, Any] | None:
        return next((m for m in self._messages.get(channel, []) if m["ts"] == ts), None)

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        """Return a copy of one message, or ``None``."""
        with self._lock:
            return copy.deepcopy(self._find(channel, ts))

    def messages(self, channel: str) -> list[dict[str, Any]]:
        """All messages of ``channel`` (roots and replies) in posting order."""
        with self._lock:
            return copy.deepcopy(self._messages.get(channel, []))

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """The root message ``ts`` followed by its replies, like ``conversations.replies``."""
        with self._lock:
            return copy.deepcopy(
                [m for m in self._messages.get(channel, []) if m["ts"] == ts or m.get("thread_ts") == ts]
            )

    def ephemerals(self, user: str, channel: str | None = None) -> list[dict[str, Any]]:
        """Ephemeral messages shown to ``user``, optionally only those in ``channel``."""
        with self._lock:
            found = self._ephemerals.get(user, [])
            return copy.deepcopy([m for m in found if channel is None or m["channel"] == channel])

    # -- views ---------------------------------------------------------------

    def _stamp_view(self, view: dict[str, Any], view_id: str | None = None) -> dict[str, Any]:
        stamped = {
            "state": {"values": {}},
            "private_metadata": "",
            "callback_id": "",
            "external_id": "",
            "root_view_id": None,
            "previous_view_id": None,
            "clear_on_close": False,
            "notify_on_close": False,
            **copy.deepcopy(view),
        }
        view_id = view_id or f"V{next(self._view_seq):08d}"
        stamped.update(id=view_id, team_id=self.team_id, app_id=self.app_id, bot_id=self.bot_id)
        stamped["root_view_id"] = stamped["root_view_id"] or view_id
        stamped["hash"] = f"{time.time():.6f}.{view_id}"
        return stamped

    def issue_trigger(self, user: str) -> str:
        """Mint a single-use ``trigger_id`` for an interaction by ``user`` (lets ``views.open`` know the user)."""
        with self._lock:
            trigger = f"{self.next_ts()}.{uuid.uuid4().hex[:16]}"
            self._triggers[trigger] = user
            return trigger

    def claim_trigger(self, trigger_id: str) -> str | None:
        """Spend ``trigger_id``: its user, ``""`` for a trigger not minted here, ``None`` if already used."""
        with self._lock:
            if trigger_id not in self._triggers:
                return ""
            user = self._triggers[trigger_id]
            self._triggers[trigger_id] = None
            return user

    def open_view(self, user: str, view: dict[str, Any]) -> dict[str, Any]:
        """Open a modal for ``user`` and return it with Slack's server-side fields filled in."""
        with self._lock:
            stamped = self._stamp_view(view)
            self._views[stamped["id"]] = stamped
            self._view_owner[stamped["id"]] = user
            self._bump()
            return copy.deepcopy(stamped)

    def update_view(
        self, view: dict[str, Any], view_id: str | None = None, external_id: str | None = None, hash: str | None = None
    ) -> dict[str, Any] | str:
        """Replace an open modal; return it, or an error code (``not_found``, ``hash_conflict``)."""
        with self._lock:
            if view_id is None:
                view_id = next(
                    (k for k, v in self._views.items() if external_id and v["external_id"] == external_id), None
                )
            current = self._views.get(view_id or "")
            if current is None or view_id is None:
                return "not_found"
            if hash and hash != current["hash"]:
                return "hash_conflict"
            stamped = self._stamp_view({**view, "root_view_id": current["root_view_id"]}, view_id)
            self._views[view_id] = stamped
            self._bump()
            return copy.deepcopy(stamped)

    def close_view(self, view_id: str) -> None:
        """Forget a modal, as when the user closes or submits it."""
        with self._lock:
            self._views.pop(view_id, None)
            self._view_owner.pop(view_id, None)
            self._bump()

    def publish_home(self, user: str, view: dict[str, Any], hash: str | None = None) -> dict[str, Any] | str:
        """Set ``user``'s App Home view; return it, or ``hash_conflict``."""
        with self._lock:
            current = self._homes.get(user)
            if hash and current is not None and hash != current["hash"]:
                return "hash_conflict"
            stamped = self._stamp_view(view, current["id"] if current else None)
            self._homes[user] = stamped
            self._bump()
            return copy.deepcopy(stamped)

    def home(self, user: str) -> dict[str, Any] | None:
        """The App Home view last published for ``user``."""
        with self._lock:
            return copy.deepcopy(self._homes.get(user))

    def open_views(self, user: str) -> list[dict[str, Any]]:
        """Modals currently open for ``user``, oldest first."""
        with self._lock:
            return copy.deepcopy([v for k, v in self._views.items() if self._view_owner.get(k) == user])

    # -- call log ------------------------------------------------------------

    def record_call(
        self, method: str, args: dict[str, Any], token: str | None, status: int, error: str | None = None
    ) -> None:
        """Append one entry to the call log (done by the Web API for every request)."""
        with self._lock:
            entry = {"method": method, "args": copy.deepcopy(args), "token": token, "at": time.time()}
            entry.update(status=status, error=error)
            self._calls.append(entry)
            self._bump()

    def calls(self, method: str | None = None) -> list[dict[str, Any]]:
        """Logged API calls, optionally only those of ``method``, oldest first."""
        with self._lock:
            return copy.deepcopy([c for c in self._calls if method is None or c["method"] == method])
