"""Surfaces of the playground workspace: modals, App Home tabs, and the trigger ids opening them.

``ViewsMixin`` is half of ``Workspace``. It keeps the views behind the workspace's lock. It
bumps the change counter like every other mutation.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from typing import Any

from bot.playground.plain_copy import plain_copy


class ViewsMixin:
    """Modals per user, one Home view per user, and single-use ``trigger_id``s."""

    team_id: str
    app_id: str
    bot_id: str
    _lock: threading.RLock
    _view_seq: itertools.count[int]
    _views: dict[str, dict[str, Any]]
    _view_owner: dict[str, str]
    _homes: dict[str, dict[str, Any]]
    _triggers: dict[str, str | None]

    def next_ts(self) -> str:
        raise NotImplementedError

    def _bump(self) -> None:
        raise NotImplementedError

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
            **plain_copy(view),
        }
        view_id = view_id or f"V{next(self._view_seq):08d}"
        stamped.update(id=view_id, team_id=self.team_id, app_id=self.app_id, bot_id=self.bot_id)
        stamped["root_view_id"] = stamped["root_view_id"] or view_id
        stamped["hash"] = f"{time.time():.6f}.{view_id}"
        return stamped

    def issue_trigger(self, user: str) -> str:
        """Mint a single-use ``trigger_id`` for ``user``'s interaction.

        So ``views.open`` knows the user.
        """
        with self._lock:
            trigger = f"{self.next_ts()}.{uuid.uuid4().hex[:16]}"
            self._triggers[trigger] = user
            return trigger

    def claim_trigger(self, trigger_id: str) -> str | None:
        """Spend ``trigger_id``, returning its user.

        Returns ``""`` for a trigger not minted here, ``None`` if already used.
        """
        with self._lock:
            if trigger_id not in self._triggers:
                return ""
            user = self._triggers[trigger_id]
            self._triggers[trigger_id] = None
            return user

    def open_view(self, user: str, view: dict[str, Any]) -> dict[str, Any]:
        """Open a modal for ``user``, returned with Slack's server-side fields filled in."""
        with self._lock:
            stamped = self._stamp_view(view)
            self._views[stamped["id"]] = stamped
            self._view_owner[stamped["id"]] = user
            self._bump()
            return plain_copy(stamped)

    def update_view(
        self, view: dict[str, Any], view_id: str | None = None, external_id: str | None = None, hash: str | None = None
    ) -> dict[str, Any] | str:
        """Replace an open modal and return it.

        Otherwise returns an error code: ``not_found`` or ``hash_conflict``.
        """
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
            return plain_copy(stamped)

    def close_view(self, view_id: str) -> None:
        """Forget a modal, as when the user closes or submits it."""
        with self._lock:
            self._views.pop(view_id, None)
            self._view_owner.pop(view_id, None)
            self._bump()

    def publish_home(self, user: str, view: dict[str, Any], hash: str | None = None) -> dict[str, Any] | str:
        """Set ``user``'s App Home view and return it, or ``hash_conflict``."""
        with self._lock:
            current = self._homes.get(user)
            if hash and current is not None and hash != current["hash"]:
                return "hash_conflict"
            stamped = self._stamp_view(view, current["id"] if current else None)
            self._homes[user] = stamped
            self._bump()
            return plain_copy(stamped)

    def home(self, user: str) -> dict[str, Any] | None:
        """The App Home view last published for ``user``."""
        with self._lock:
            return plain_copy(self._homes.get(user))

    def open_views(self, user: str) -> list[dict[str, Any]]:
        """Modals currently open for ``user``, oldest first."""
        with self._lock:
            return plain_copy([v for k, v in self._views.items() if self._view_owner.get(k) == user])

    def view(self, view_id: str) -> dict[str, Any] | None:
        """A copy of the open modal ``view_id``, or ``None``."""
        with self._lock:
            return plain_copy(self._views.get(view_id))

    def view_owner(self, view_id: str) -> str | None:
        """The user a modal was opened for."""
        with self._lock:
            return self._view_owner.get(view_id)
