"""Calls to Slack's agent surfaces that never fail a run.

Slack's agent methods (`agents.sessions.*`, `assistant.threads.setStatus`) exist only for
apps declared as agents, with the right scopes and plan. A workspace without them answers
`unknown_method`, `not_allowed_token_type`, `missing_scope` or `feature_not_enabled`. That
answer is remembered per workspace and method in Redis, logged once and counted, and the
method is not called there again. Any other refusal or a dropped connection is logged.
The run goes on with its plain messages either way.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from workers.interaction import RunInfo
from workers.logs import Log
from workers.store.slack_surfaces import SurfaceStore

log = Log("parley.slack.agents")
UNAVAILABLE = frozenset({"unknown_method", "not_allowed_token_type", "missing_scope", "feature_not_enabled"})
"""Refusals meaning the workspace lacks the surface, not that this one call went wrong."""
BLOCK_SURFACES = frozenset({"plan", "feedback"})
"""Surfaces that are blocks: a workspace without them refuses the message (`invalid_blocks`)."""
SURFACE_UNAVAILABLE = Counter(
    "parley_slack_surface_unavailable",
    "Workspaces found without one of Slack's agent surfaces, by method and Slack's error",
    ["method", "error"],
)


class AgentSurfaces:
    """Calls one agent method for a run, unless its workspace is known to lack it."""

    def __init__(self, store: SurfaceStore) -> None:
        self.store = store

    def available(self, run: RunInfo, surface: str) -> bool:
        """False once the run's workspace refused `surface` (a method, or `plan`) as unavailable (for a day)."""
        return not self.store.lacks(str(run.conversation.get("team") or ""), surface)

    def call(
        self, web: WebClient, run: RunInfo, method: str, *, surface: str = "", **args: Any
    ) -> dict[str, Any] | None:
        """slack_sdk's method for `method` (`agents.sessions.setStatus`: `agents_sessions_setStatus`) with `args`.

        `surface`: what a workspace may lack when it refuses (for blocks, `plan`; else the method).
        Slack's reply, or None when the call was not made or was refused."""
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
        """Slack refused `method` with `error`: remembered and logged once if the workspace lacks it."""
        if error not in UNAVAILABLE and not (method in BLOCK_SURFACES and error == "invalid_blocks"):
            log.warning("agent surface call refused", **run.log_context(), method=method, error=error)
            return
        team = str(run.conversation.get("team") or "")
        if self.store.mark_lacking(team, method, error):
            SURFACE_UNAVAILABLE.labels(method=method, error=error).inc()
            fields = {**run.log_context(), "method": method, "error": error}
            log.info("workspace lacks an agent surface; plain messages only", **fields)
