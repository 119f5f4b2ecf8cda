"""The App Home tab: "Waiting on you" for everyone, paused runs and controls for admins.

It is published when a person opens the tab, and after an admin's button on it. So both
`bot.listeners.events` and `bot.listeners.admin_actions` use it.
"""

from __future__ import annotations

import time
from typing import Any

from slack_bolt import BoltContext
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.deps import BotDeps
from bot.slack import blocks
from workers.logs import Log
from workers.runs import UNREADABLE, Away, RunStatus

WAITING_SHOWN = 20
log = Log("parley.home")


def waiting_entries(
    deps: BotDeps, client: WebClient, user: str, context: BoltContext | None = None
) -> list[dict[str, Any]]:
    """The questions waiting on `user`.

    With many workspaces, only those of the tab's workspace.
    """
    runs, now = deps.runs, time.time()
    tenant = deps.tenant(context) if context is not None else None
    entries = []
    for iid in runs.waiting_on(user, limit=WAITING_SHOWN):
        try:
            q = runs.interrupt(iid)
            run = runs.find(q.run_id) if q is not None else None
        except UNREADABLE as exc:  # written by another version: the others are still shown
            log.error("a question waiting on the user cannot be read", interrupt_id=iid, user=user, error=repr(exc))
            continue
        if q is None:
            continue
        if tenant is not None and (run is None or not tenant.owns(run.conversation)):
            continue
        permalink = None
        msg = q.message
        if msg.get("ts"):
            try:
                permalink = client.chat_getPermalink(channel=msg["channel"], message_ts=msg["ts"])["permalink"]
            except SlackApiError:
                permalink = None
        entries.append(
            {
                "run_id": q.run_id,
                "agent": run.agent if run else "?",
                "reason": q.request.reason,
                "permalink": permalink,
                "asked_at": q.asked_at,
                "now": now,
            }
        )
    return entries


def admin_section(deps: BotDeps, user: str, page: int, context: BoltContext | None = None) -> dict[str, Any]:
    where = deps.admin_filter(user, context) if context is not None else None
    listing = deps.runs.list_runs(RunStatus.PAUSED, page=page, per_page=blocks.HOME_PAGE_SIZE, where=where)
    runs = [deps.runs.summarize(r) for r in listing.runs]
    counts = deps.runs.counts(where)
    return {"counts": counts, "runs": runs, "page": page, "has_next": listing.has_next}


def publish_home(
    deps: BotDeps, client: WebClient, user: str, *, page: int = 0, context: BoltContext | None = None
) -> None:
    """Publish `user`'s Home tab.

    Admins see page `page` of the paused runs, of the tab's workspace. A tab Slack refuses is
    logged with whose it was; the person sees the tab as it last was, and opening it tries again.
    """
    view = blocks.home_view(
        waiting=waiting_entries(deps, client, user, context),
        admin=admin_section(deps, user, page, context) if deps.is_admin(user, context) else None,
        away=_away(deps, user, context),
    )
    try:
        client.views_publish(user_id=user, view=view)
    except (SlackClientError, OSError) as exc:  # SlackApiError is a SlackClientError
        error = exc.response.get("error") if isinstance(exc, SlackApiError) else repr(exc)
        log.warning("home tab not published", user=user, team=_team(context), error=error)


def _team(context: BoltContext | None) -> str:
    return str(context.team_id or "") if context is not None else ""


def _away(deps: BotDeps, user: str, context: BoltContext | None) -> Away | None:
    """`user`'s absence in the tab's workspace, or set for every workspace.

    The tab's workspace is its team, from the request.
    """
    team = str(context.get("team_id") or "") if context is not None else ""
    return deps.runs.away(team, user)
