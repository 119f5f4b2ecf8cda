"""What Parley remembers of Slack's agent surfaces: lacking workspaces, runs' session status."""

from __future__ import annotations

import json
from typing import Any

from redis import Redis
from redis.exceptions import WatchError

from workers.store import keys
from workers.store.replies import reply

LACKING_FOR = 86400
"""How long a workspace is known to lack a surface: a day, so an app that gained it is seen again."""
STATUS_KEPT_FOR = 90 * 86400
"""How long a run's last session status is kept: a question's longest life."""


class SurfaceStore:
    """Two small string keys: a workspace's missing surface, a run's last session status."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    def lacks(self, team: str, method: str) -> bool:
        return bool(self.redis.exists(keys.surface_off(team, method)))

    def mark_lacking(self, team: str, method: str, error: str) -> bool:
        """Remember that `team` refused `method` with `error`.

        True the first time within a day.
        """
        return bool(self.redis.set(keys.surface_off(team, method), error, nx=True, ex=LACKING_FOR))

    def swap_status(self, run_id: str, status: str, *, create: bool = False) -> str | None:
        """Record `status` as the run's session status, returning the one replaced.

        Without `create`, a run with no session is left without one. Its thread started before Parley
        kept sessions, or it is an API question's. Nothing is recorded then, and None is returned.
        """
        key = keys.session_status(run_id)
        old = reply(self.redis.set(key, status, ex=STATUS_KEPT_FOR, get=True, xx=not create))
        return old.decode() if isinstance(old, bytes) else old

    def restore_status(self, run_id: str, status: str, old: str) -> None:
        """Put back `old` where `status` was recorded but Slack never showed it.

        `old` "" means the run had no session yet. A status recorded since is left as it is.
        """
        key = keys.session_status(run_id)
        with self.redis.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(key)
                if reply(pipe.get(key)) != status.encode():
                    return
                pipe.multi()
                if old:
                    pipe.set(key, old, ex=STATUS_KEPT_FOR)
                else:
                    pipe.delete(key)
                pipe.execute()
            except WatchError:
                return  # another status was recorded meanwhile: it is the one to keep

    def plan(self, run_id: str) -> dict[str, Any] | None:
        """The run's last saved live plan, its tasks and message, or None."""
        raw = reply(self.redis.get(keys.plan(run_id)))
        return json.loads(raw) if raw else None

    def save_plan(self, run_id: str, plan: dict[str, Any]) -> None:
        self.redis.set(keys.plan(run_id), json.dumps(plan, separators=(",", ":")), ex=STATUS_KEPT_FOR)
