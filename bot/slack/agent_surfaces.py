"""Calls to Slack's agent surfaces that never fail a run.

Slack's agent methods (`agents.sessions.*`, `assistant.threads.setStatus`) exist only for
apps declared as agents, with the right scopes and plan. A workspace without them answers
`unknown_method`, `not_allowed_token_type`, `missing_scope` or `feature_not_enabled`. That
answer is remembered per workspace and method in Redis, logged once and counted, and the
method is not called there again. Any other refusal or a dropped connection is logged.
The run goes on with its plain messages either way.

Each process reads what Redis remembers of a workspace's surface once a `KNOWN_FOR`, not
before every call: a run's cycle makes several such calls. A refusal another process met
meanwhile costs this one at most one refused call of its own.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Counter
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from workers.interaction import RunInfo
from workers.logs import Log
from workers.runs import SurfaceStore

log = Log("parley.slack.agents")
UNAVAILABLE = frozenset({"unknown_method", "not_allowed_token_type", "missing_scope", "feature_not_enabled"})
"""Refusals meaning the workspace lacks the surface, not that this one call went wrong."""
BLOCK_SURFACES = frozenset({"plan", "feedback", "alert"})
"""Surfaces that are blocks: a workspace without them refuses the message (`invalid_blocks`)."""
KNOWN_FOR = 60.0
"""Seconds a process trusts what it read of a workspace's surface before reading Redis again."""
SURFACE_UNAVAILABLE = Counter(
    "parley_slack_surface_unavailable",
    "Workspaces found without one of Slack's agent surfaces, by method and Slack's error",
    ["method", "error"],
)


class AgentSurfaces:
    """Calls one agent method for a run, unless its workspace is known to lack it."""

    def __init__(self, store: SurfaceStore, known_for: float = KNOWN_FOR) -> None:
        self.store = store
        self.known_for = known_for
        self._known: dict[tuple[str, str], tuple[bool, float]] = {}  # (team, surface) -> (has it, until)

    def available(self, run: RunInfo, surface: str) -> bool:
        """False once the run's workspace refused `surface` (a method, or `plan`) as unavailable (for a day)."""
        team, now = str(run.conversation.get("team") or ""), time.monotonic()
        known = self._known.get((team, surface))
        if known is not None and known[1] > now:
            return known[0]
        has = not self.store.lacks(team, surface)
        self._known[(team, surface)] = (has, now + self.known_for)
        return has

    def call(
        self, web: WebClient, run: RunInfo, method: str, *, surface: str = "", **args: Any
    ) -> dict[str, Any] | None:
        """slack_sdk's method for `method`, called with `args`.

        `agents.sessions.setStatus` maps to `agents_sessions_setStatus`, for example. `surface` is what
        a refusing workspace may lack: `plan` for blocks, else the method. Returns Slack's reply, or
        None when the call was not made or was refused.
        """
        surface = surface or method
        if not self.available(run, surface):
            return None
        try:
            reply = getattr(web, method.replace(".", "_"))(**args)
            return dict(reply.data) if isinstance(reply.data, dict) else {}
        except SlackApiError as exc:
            self.refused(run, surface, str(exc.response.get("error") or "unknown"))
        except (SlackClientError, OSError) as exc:
            log.warning("agent surface call failed", **run.log_context(), method=method, error=str(exc))
        return None

    def refused(self, run: RunInfo, method: str, error: str) -> None:
        """Note Slack refused `method` with `error`, remembered and logged once if lacking."""
        if error not in UNAVAILABLE and not (method in BLOCK_SURFACES and error == "invalid_blocks"):
            log.warning("agent surface call refused", **run.log_context(), method=method, error=error)
            return
        team = str(run.conversation.get("team") or "")
        self._known[(team, method)] = (False, time.monotonic() + self.known_for)
        if self.store.mark_lacking(team, method, error):
            SURFACE_UNAVAILABLE.labels(method=method, error=error).inc()
            fields = {**run.log_context(), "method": method, "error": error}
            log.info("workspace lacks an agent surface; plain messages only", **fields)
