"""In-memory Slack workspace behind the Web API stand-in.

Tests and the local playground need a Slack they fully control. That means who is an admin,
which channels exist, and what the bot posted where. It also means which API calls it made.
``Workspace`` holds that state behind one re-entrant lock. So the uvicorn thread serving the API
never sees half-applied changes. Nor does the test thread inspecting it. Every mutation bumps
``events`` and notifies ``changed``. So live views, like the playground UI or polling tests,
block until something happens. They need not sleep.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from typing import Any

from bot.playground.agent_methods import AgentState
from bot.playground.directory import (
    APP_ID,
    BOT_ID,
    BOT_USER_ID,
    TEAM_DOMAIN,
    TEAM_ID,
    TEAM_NAME,
    Channel,
    User,
    UserGroup,
)
from bot.playground.faults import Fault, FaultPlan
from bot.playground.installs import Installs
from bot.playground.plain_copy import plain_copy
from bot.playground.views import ViewsMixin

__all__ = [
    "APP_ID",
    "BOT_ID",
    "BOT_USER_ID",
    "TEAM_DOMAIN",
    "TEAM_ID",
    "TEAM_NAME",
    "Channel",
    "Fault",
    "FaultPlan",
    "User",
    "UserGroup",
    "Workspace",
]

#: Calls a workspace keeps in its log by default: enough for any test or screenful of the
#: playground, and a bound, so a `parley dev` left running for days does not grow with every call.
CALL_LOG_LIMIT = 10_000


class Workspace(ViewsMixin):
    """Thread-safe state of one fake Slack team: users, channels, messages, views, calls."""

    def __init__(
        self, team_id: str = TEAM_ID, team_name: str = TEAM_NAME, *, call_log_limit: int | None = CALL_LOG_LIMIT
    ) -> None:
        """``call_log_limit`` is how many of the newest calls the log keeps.

        ``None`` keeps every one, for an instrument reading its whole log, like the bench's stand-in.
        """
        if call_log_limit is not None and call_log_limit < 1:
            raise ValueError(f"call_log_limit must be at least 1 or None, not {call_log_limit}")
        self.team_id = team_id
        self.team_name = team_name
        self.team_domain = TEAM_DOMAIN
        self.bot_user_id = BOT_USER_ID
        self.bot_id = BOT_ID
        self.app_id = APP_ID
        self.faults = FaultPlan()
        #: URL returned by ``apps.connections.open``; ``None`` derives one from the request host.
        self.socket_mode_url: str | None = None
        #: Base for ``chat.getPermalink``; ``None`` uses the URL the request arrived on.
        self.permalink_base: str | None = None
        #: Tokens the Web API knows; ``None`` knows any token of a known kind (xoxb-, xapp-, xoxe).
        self.accepted_tokens: set[str] | None = None
        self._apps: dict[str, dict[str, Any]] = {}
        #: Installs through OAuth into simulated workspaces (`oauth.v2.access` and their tokens).
        self.installs = Installs(self.app_id)
        #: The `X-OAuth-Scopes` header of each reply (comma-separated); ``None`` sends none.
        self.oauth_scopes: str | None = None
        #: Agent sessions and assistant statuses (`bot.playground.agent_methods`).
        self.agents = AgentState()
        self._lock = threading.RLock()
        self.changed = threading.Condition(self._lock)
        self._events = 0
        self._last_us = 0
        self._view_seq = itertools.count(1)
        self._users: dict[str, User] = {}
        self._groups: dict[str, UserGroup] = {}
        self._channels: dict[str, Channel] = {}
        self._messages: dict[str, list[dict[str, Any]]] = {}
        #: (channel, ts) → the message in ``_messages``: a long-lived playground finds a message
        #: to thread under, update or delete without walking its channel's whole history.
        self._by_ts: dict[tuple[str, str], dict[str, Any]] = {}
        self._ephemerals: dict[str, list[dict[str, Any]]] = {}
        self._views: dict[str, dict[str, Any]] = {}
        self._view_owner: dict[str, str] = {}
        self._homes: dict[str, dict[str, Any]] = {}
        self._triggers: dict[str, str | None] = {}
        self._calls: deque[dict[str, Any]] = deque(maxlen=call_log_limit)
        for user in (
            User("U0ALICE", "alice", "Alice Admin", is_admin=True),
            User("U0BOB", "bob", "Bob"),
            User("U0CAROL", "carol", "Carol"),
            User(BOT_USER_ID, "parley", "Parley", is_bot=True),
        ):
            self.add_user(user)
        self.add_channel(Channel("C0GENERAL", "general"))
        self.add_channel(Channel("C0OPS", "ops"))
        self.add_usergroup(UserGroup("S0REVIEWERS", "reviewers", ("U0ALICE", "U0CAROL")))

    # -- change notification -------------------------------------------------

    @property
    def events(self) -> int:
        """Monotonic change counter; compare with an earlier value to detect updates."""
        with self._lock:
            return self._events

    def wait_for_change(self, since: int, timeout: float | None = None) -> int:
        """Block until ``events`` exceeds ``since``, or ``timeout``, returning the counter."""
        with self.changed:
            self.changed.wait_for(lambda: self._events > since, timeout)
            return self._events

    def _bump(self) -> None:
        self._events += 1
        self.changed.notify_all()

    def touch(self) -> None:
        """Note a change the page shows outside the messages, so pollers look again.

        An agent session is one.
        """
        with self._lock:
            self._bump()

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

    def add_usergroup(self, group: UserGroup) -> None:
        """Add or replace a user group."""
        with self._lock:
            self._groups[group.id] = group
            self._bump()

    def usergroup(self, group_id: str) -> UserGroup | None:
        """Look a user group up by id."""
        with self._lock:
            return self._groups.get(group_id)

    def usergroups(self) -> list[UserGroup]:
        """Every user group, in the order they were added."""
        with self._lock:
            return list(self._groups.values())

    def add_channel(self, channel: Channel) -> None:
        """Add or replace a channel."""
        with self._lock:
            self._channels[channel.id] = channel
            self._messages.setdefault(channel.id, [])
            self._bump()

    def users(self) -> list[User]:
        """Every member, in the order they were added."""
        with self._lock:
            return list(self._users.values())

    def channels(self) -> list[Channel]:
        """Every channel, in the order they were added."""
        with self._lock:
            return list(self._channels.values())

    def channel(self, channel_id: str) -> Channel | None:
        """Look a channel up by id (DMs are not channels here)."""
        with self._lock:
            return self._channels.get(channel_id)

    def user(self, user_id: str) -> User | None:
        """Look a member up by id."""
        with self._lock:
            return self._users.get(user_id)

    def resolve_channel(self, ref: str) -> str | None:
        """Map a channel id, ``name``/``#name``, or a user id (a DM) to a channel id.

        The bot's DM with user ``U…`` is ``D…``, the same id with a D. Any other DM or group DM is one
        the bot is not in, so it is not found.
        """
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
            if ref.startswith("D") and (ref in self._messages or "U" + ref[1:] in self._users):
                self._messages.setdefault(ref, [])
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
        """Append a message, by the bot unless ``user`` is given, and return a copy."""
        with self._lock:
            author = user or self.bot_user_id
            msg: dict[str, Any] = {"type": "message", "user": author, "text": text, "ts": self.next_ts()}
            msg["team"] = self.team_id
            if author == self.bot_user_id:
                msg.update(bot_id=self.bot_id, app_id=self.app_id)
            if blocks:
                msg["blocks"] = plain_copy(blocks)
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
            self._by_ts[(channel, msg["ts"])] = msg
            self._bump()
            return plain_copy(msg)

    def update_message(
        self, channel: str, ts: str, text: str | None = None, blocks: list[Any] | None = None
    ) -> dict[str, Any] | None:
        """Edit a message in place.

        ``blocks=None`` keeps the old blocks, and ``[]`` removes them.
        """
        with self._lock:
            msg = self._find(channel, ts)
            if msg is None:
                return None
            if text is not None:
                msg["text"] = text
            if blocks is not None:
                msg["blocks"] = plain_copy(blocks)
            msg["edited"] = {"user": self.bot_user_id, "ts": self.next_ts()}
            self._bump()
            return plain_copy(msg)

    def post_ephemeral(
        self, channel: str, user: str, text: str = "", blocks: list[Any] | None = None, thread_ts: str | None = None
    ) -> str:
        """Record a message only ``user`` sees in ``channel``, returning its ``message_ts``."""
        with self._lock:
            ts = self.next_ts()
            msg: dict[str, Any] = {"type": "message", "channel": channel, "user": user, "text": text, "ts": ts}
            msg.update({k: v for k, v in (("blocks", plain_copy(blocks)), ("thread_ts", thread_ts)) if v})
            self._ephemerals.setdefault(user, []).append(msg)
            self._bump()
            return ts

    def edit_ephemeral(
        self, user: str, ts: str, text: str | None = None, blocks: list[Any] | None = None, *, delete: bool = False
    ) -> bool:
        """Replace, or with ``delete`` remove, one of ``user``'s ephemeral messages.

        False if it is gone.
        """
        with self._lock:
            found = self._ephemerals.get(user, [])
            msg = next((m for m in found if m["ts"] == ts), None)
            if msg is None:
                return False
            if delete:
                found.remove(msg)
            else:
                msg["text"] = msg["text"] if text is None else text
                msg.pop("blocks", None)
                if blocks:
                    msg["blocks"] = plain_copy(blocks)
            self._bump()
            return True

    def delete_message(self, channel: str, ts: str) -> bool:
        """Remove a message, as ``chat.delete`` or a ``delete_original`` response does.

        False if unknown.
        """
        with self._lock:
            msg = self._find(channel, ts)
            if msg is None:
                return False
            self._messages[channel].remove(msg)
            del self._by_ts[(channel, ts)]
            self._bump()
            return True

    def _find(self, channel: str, ts: str | None) -> dict[str, Any] | None:
        return self._by_ts.get((channel, ts)) if ts is not None else None

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        """Return a copy of one message, or ``None``."""
        with self._lock:
            return plain_copy(self._find(channel, ts))

    def messages(self, channel: str) -> list[dict[str, Any]]:
        """All messages of ``channel`` (roots and replies) in posting order."""
        with self._lock:
            return plain_copy(self._messages.get(channel, []))

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """The root message ``ts`` followed by its replies, like ``conversations.replies``."""
        with self._lock:
            return plain_copy([m for m in self._messages.get(channel, []) if m["ts"] == ts or m.get("thread_ts") == ts])

    def ephemerals(self, user: str, channel: str | None = None) -> list[dict[str, Any]]:
        """Ephemeral messages shown to ``user``, optionally only those in ``channel``."""
        with self._lock:
            found = self._ephemerals.get(user, [])
            return plain_copy([m for m in found if channel is None or m["channel"] == channel])

    # -- apps made with apps.manifest.create --------------------------------

    def add_app(self, app_id: str, manifest: dict[str, Any], credentials: dict[str, str]) -> None:
        """Record an app made from ``manifest`` with its ``credentials``."""
        with self._lock:
            self._apps[app_id] = {"manifest": plain_copy(manifest), "credentials": dict(credentials)}
            self._bump()

    def apps(self) -> dict[str, dict[str, Any]]:
        """Every app made so far: app id → ``{"manifest", "credentials"}``."""
        with self._lock:
            return plain_copy(self._apps)

    # -- call log ------------------------------------------------------------

    def record_call(
        self, method: str, args: dict[str, Any], token: str | None, status: int, error: str | None = None
    ) -> None:
        """Append one entry to the call log, as the Web API does for every request."""
        with self._lock:
            entry = {"method": method, "args": plain_copy(args), "token": token, "at": time.time()}
            entry.update(status=status, error=error)
            self._calls.append(entry)
            self._bump()

    def calls(self, method: str | None = None) -> list[dict[str, Any]]:
        """Logged API calls, oldest first, optionally only ``method``'s.

        The log keeps the newest ``call_log_limit``, and older ones leave it.
        """
        with self._lock:
            return plain_copy([c for c in self._calls if method is None or c["method"] == method])
