"""Away, set by the person from App Home: "Set away…", the form's Save, and "I'm back".

Questions asked during an absence go to the delegate (`RunService.set_away`). Open questions
stay where they are. The form is refused if it names oneself, a bot or a past time. The refusal
names the field in the form itself, and nothing is saved.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.deps import BotDeps
from bot.home_tab import publish_home
from bot.slack.blocks_away import (
    AWAY_BACK_ACTION_ID,
    AWAY_CALLBACK_ID,
    AWAY_OPEN_ACTION_ID,
    DELEGATE_BLOCK,
    UNTIL_BLOCK,
    away_form,
    form_values,
)
from workers.logs import Log

log = Log("parley.away")


def on_open(ack: Ack, body: dict[str, Any], client: WebClient) -> None:
    ack()
    if body.get("trigger_id"):
        client.views_open(trigger_id=body["trigger_id"], view=away_form(time.time()))


def on_back(ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps) -> None:
    ack()
    user, team = body["user"]["id"], _team(body)
    deps.runs.back(team, user)
    log.info("back", user=user, team=team)
    publish_home(deps, client, user, context=context)


def on_save(ack: Ack, body: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps) -> None:
    """Check and save the form, or name the field to fix, keeping the form open."""
    user, team = body["user"]["id"], _team(body)
    until, delegate = form_values(body.get("view") or {})
    errors = {}
    if until is None or until <= time.time():
        errors[UNTIL_BLOCK] = "Pick a time in the future."
    if not delegate or delegate == user:
        errors[DELEGATE_BLOCK] = "Pick someone other than yourself."
    elif _is_bot(client, delegate):
        errors[DELEGATE_BLOCK] = "That's a bot; pick a person."
    if errors:
        ack(response_action="errors", errors=errors)
        return
    assert until is not None
    ack()
    deps.runs.set_away(team, user, until, delegate, by=user)
    log.info("away", user=user, team=team, until=until, delegate=delegate)
    publish_home(deps, client, user, context=context)


def _team(body: dict[str, Any]) -> str:
    return str((body.get("team") or {}).get("id") or body.get("user", {}).get("team_id") or "")


def _is_bot(client: WebClient, user: str) -> bool:
    try:
        info = client.users_info(user=user)["user"]
    except SlackApiError:
        return False  # Slack will say when it is asked; a person's save is not refused on a lookup
    return bool(info.get("is_bot")) or info.get("id") == "USLACKBOT"


def register(app: App, deps: BotDeps) -> None:
    app.action(AWAY_OPEN_ACTION_ID)(on_open)
    app.action(AWAY_BACK_ACTION_ID)(partial(on_back, deps=deps))
    app.view(AWAY_CALLBACK_ID)(partial(on_save, deps=deps))
