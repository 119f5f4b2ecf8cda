"""The App Home tab: "Waiting on you" for everyone, paused runs and controls for admins.

Published when a person opens the tab and again after an admin's button on it, so both
`bot.listeners.events` and `bot.listeners.admin_actions` use it.
"""

from __future__ import annotations

import time
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.deps import BotDeps
from bot.slack import blocks
from workers.runtime import admin
from workers.store.records import RunStatus

WAITING_SHOWN = 20


def waiting_entries(deps: BotDeps, client: WebClient, user: str) -> list[dict[str, Any]]:
    store, now = deps.runtime.store, time.time()
    entries = []
    for iid in store.waiting_on(user, limit=WAITING_SHOWN):
        q = store.interrupt(iid)
        if q is None:
            continue
        run = store.find(q.run_id)
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


def admin_section(deps: BotDeps, page: int) -> dict[str, Any]:
    listing = admin.list_runs(deps.runtime, RunStatus.PAUSED, page=page, per_page=blocks.HOME_PAGE_SIZE)
    runs = [admin.summarize(deps.runtime, r) for r in listing.runs]
    return {"counts": deps.runtime.store.counts(), "runs": runs, "page": page, "has_next": listing.has_next}


def publish_home(deps: BotDeps, client: WebClient, user: str, *, page: int = 0) -> None:
    """Publish `user`'s Home tab; admins see page `page` of the paused runs."""
    view = blocks.home_view(
        waiting=waiting_entries(deps, client, user),
        admin=admin_section(deps, page) if deps.is_admin(user) else None,
    )
    client.views_publish(user_id=user, view=view)
