"""The admins' run controls on the Home tab and failed-run messages.

They are Cancel, Retry, Remind and paging. They are acked at once. The work runs after the ack
in a bolt lazy listener, because it calls the Web API. A cancel locks the question, a remind
posts, and the Home tab is published again. Who may press them is checked here against
`PARLEY_ADMINS`, not by who can see them.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.deps import BotDeps
from bot.home_tab import publish_home
from bot.slack import blocks
from bot.slack.payload_fields import channel_of, clicked, thread_of
from workers.exceptions import AdminError, ParleyError
from workers.logs import Log

log = Log("parley.actions")
ADMIN_ACTION_IDS = (
    blocks.ADMIN_CANCEL_ACTION_ID,
    blocks.ADMIN_RETRY_ACTION_ID,
    blocks.ADMIN_REMIND_ACTION_ID,
    blocks.ADMIN_PAGE_ACTION_ID,
)


def ack_admin_action(ack: Ack) -> None:
    ack()


def do_admin_action(body: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps) -> None:
    """After the ack: check the clicker admins the run's workspace, act, show the result."""
    action = clicked(body)
    user, run_id = body["user"]["id"], str(action.get("value", ""))
    action_id = action.get("action_id", "")
    in_home = (body.get("container") or {}).get("type") == "view"
    if not deps.is_admin(user, context) or not _in_workspace(deps, context, user, run_id, action_id):
        log.warning("admin action refused", user=user, run_id=run_id, action=action_id)
        _tell(client, body, user, "Only Parley admins can do that.")
        return
    page = 0
    try:
        if action_id == blocks.ADMIN_CANCEL_ACTION_ID:
            deps.runs.cancel(run_id, by=user)
        elif action_id == blocks.ADMIN_RETRY_ACTION_ID:
            deps.runs.retry(run_id, by=user)
        elif action_id == blocks.ADMIN_REMIND_ACTION_ID:
            deps.runs.remind(run_id, by=user)
        elif action_id == blocks.ADMIN_PAGE_ACTION_ID:
            page = max(int(run_id or 0), 0)
        if action_id != blocks.ADMIN_PAGE_ACTION_ID:
            log.info("admin action", run_id=run_id, user=user, action=action_id)
            if not in_home:
                _tell(client, body, user, f"Done: {action_id.removeprefix('parley_admin_')} run `{run_id}`.")
    except (AdminError, ParleyError, ValueError) as exc:
        _tell(client, body, user, f":warning: {exc}")
    if in_home:
        publish_home(deps, client, user, page=page, context=context)


def _in_workspace(deps: BotDeps, context: BoltContext, user: str, run_id: str, action_id: str) -> bool:
    """Admins act only on the runs their reach covers (`BotDeps.admin_over`)."""
    if action_id == blocks.ADMIN_PAGE_ACTION_ID:
        return True
    run = deps.runs.find(run_id)
    return run is None or deps.admin_over(user, context, run.conversation)


def _tell(client: WebClient, body: dict[str, Any], user: str, text: str) -> None:
    """Tell the clicker alone, beside the clicked message, or by DM from the Home tab."""
    channel = channel_of(body)
    if channel:
        client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_of(body))
    else:
        client.chat_postMessage(channel=user, text=text)


def register(app: App, deps: BotDeps) -> None:
    for action_id in ADMIN_ACTION_IDS:
        app.action(action_id)(ack=ack_admin_action, lazy=[partial(do_admin_action, deps=deps)])
