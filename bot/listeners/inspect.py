"""Inspect: a run's history, steps, question and answers in a modal, for admins and its askees.

"Inspect" sits on each run of the admins' App Home and of `/parley runs`. The modal pages
through the run's history with its own buttons. It opens straight from the click, since a
`trigger_id` lives three seconds. Who may see the run is checked here, on every click. That is
Parley admins, and the people its latest question asks.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.deps import BotDeps
from bot.slack.blocks_inspect import INSPECT_ACTION_ID, INSPECT_PAGE_ACTION_ID, inspect_view, notice_view
from bot.slack.payload_fields import clicked
from workers.exceptions import RunNotFound
from workers.logs import Log
from workers.runs import RunDetail

log = Log("parley.inspect")
NOT_YOURS = "Only Parley admins and the people this run asks can inspect it."
GONE = "This run no longer exists."
UNREADABLE = "This run's record cannot be read; the logs say why."


def may_inspect(deps: BotDeps, user: str, detail: RunDetail, context: BoltContext | None = None) -> bool:
    """Admins see every run of their workspace, others only runs asking them."""
    tenant = deps.tenant(context) if context is not None else None
    if tenant is not None and not tenant.owns(detail.run.conversation):
        return False
    asked = [q.assignees for q in detail.questions] + ([detail.interrupt.assignees] if detail.interrupt else [])
    return deps.admin_over(user, context, detail.run.conversation) or any(user in assignees for assignees in asked)


def view_for(deps: BotDeps, user: str, run_id: str, page: int, context: BoltContext | None = None) -> dict[str, Any]:
    """The modal `user` gets for run `run_id`: the run, or why not."""
    try:
        detail = deps.runs.show(run_id)
    except RunNotFound:
        return notice_view(GONE)
    except Exception:  # a record this version cannot read: say so, never a 5xx
        log.error("inspect: the run cannot be read", exc=True, run_id=run_id, user=user)
        return notice_view(UNREADABLE)
    if not may_inspect(deps, user, detail, context):
        log.warning("inspect refused", run_id=run_id, user=user)
        return notice_view(NOT_YOURS)
    try:
        return inspect_view(detail, page=page)
    except Exception:
        log.error("inspect: the run cannot be shown", exc=True, run_id=run_id, user=user)
        return notice_view(UNREADABLE)


def on_inspect(ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps) -> None:
    ack()
    user, run_id = body["user"]["id"], str(clicked(body).get("value", ""))
    try:
        client.views_open(trigger_id=body["trigger_id"], view=view_for(deps, user, run_id, 0, context))
    except SlackApiError as exc:
        log.warning("could not open the Inspect modal", run_id=run_id, user=user, error=str(exc))


def on_inspect_page(ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps) -> None:
    """ "Older"/"Newer" in the modal: the same run, another page of its history."""
    ack()
    run_id, _, page = str(clicked(body).get("value", "")).rpartition("|")
    user, view = body["user"]["id"], body.get("view") or {}
    try:
        client.views_update(
            view_id=view.get("id"), hash=view.get("hash"), view=view_for(deps, user, run_id, int(page or 0), context)
        )
    except (SlackApiError, ValueError) as exc:
        log.warning("could not page the Inspect modal", run_id=run_id, user=user, error=str(exc))


def register(app: App, deps: BotDeps) -> None:
    app.action(INSPECT_ACTION_ID)(partial(on_inspect, deps=deps))
    app.action(INSPECT_PAGE_ACTION_ID)(partial(on_inspect_page, deps=deps))
