"""Button clicks: Submit, one-click choices, "Answer in a form", and the admins' run controls."""

from __future__ import annotations

import re
from typing import Any

import redis
from slack_bolt import Ack, App
from slack_sdk import WebClient

from bot.deps import BotDeps
from bot.listeners.home import publish_home
from bot.slack import blocks
from bot.slack.form_state import StateError, parse_block_id, parse_state_values
from bot.slack.refusals import tell_refusal
from workers.exceptions import AdminError, ParleyError
from workers.interaction import Answer
from workers.logs import Log
from workers.runtime import admin
from workers.runtime.acceptance import AnswerOutcome, try_accept, unavailable
from workers.store.records import RefusalReason

log = Log("parley.actions")


def _clicked(body: dict[str, Any]) -> dict[str, Any]:
    return (body.get("actions") or [{}])[0]


def _token(body: dict[str, Any], action: dict[str, Any]) -> str:
    """The same click delivered twice carries the same token, so acceptance stays idempotent."""
    return f"{body.get('user', {}).get('id')}:{action.get('action_ts', '')}"


def _channel(body: dict[str, Any]) -> str | None:
    return (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")


def register(app: App, deps: BotDeps) -> None:
    store = deps.runtime.store

    def submit_outcome(body: dict[str, Any]) -> AnswerOutcome:
        """Submit: decode the form's state against the stored request, then accept."""
        action = _clicked(body)
        iid, user = str(action.get("value", "")), body["user"]["id"]
        team = (body.get("team") or {}).get("id")
        try:
            interrupt = store.interrupt(iid) if iid else None
        except redis.RedisError:
            return unavailable(iid, user, team)
        if interrupt is None:
            return AnswerOutcome.refused(iid, user, RefusalReason.UNKNOWN)
        try:
            answers = parse_state_values(interrupt.request, iid, (body.get("state") or {}).get("values") or {})
        except StateError as exc:
            return AnswerOutcome.refused(iid, user, RefusalReason.INVALID, errors={"form": str(exc)})
        return try_accept(deps.runtime, interrupt, user, answers, team=team, token=_token(body, action))

    def choose_outcome(body: dict[str, Any]) -> AnswerOutcome:
        """A one-click option button: its value is the choice."""
        action = _clicked(body)
        ref = parse_block_id(str(action.get("block_id", "")))
        iid = ref[1] if ref and ref[0] == "qc" else ""  # (kind, iid, version, item_id)
        user, team = body["user"]["id"], (body.get("team") or {}).get("id")
        try:
            interrupt = store.interrupt(iid) if iid else None
        except redis.RedisError:
            return unavailable(iid, user, team)
        if interrupt is None:
            return AnswerOutcome.refused("", user, RefusalReason.UNKNOWN)
        answers = [Answer(id=interrupt.request.items[0].id, choice=str(action.get("value", "")))]
        return try_accept(deps.runtime, interrupt, user, answers, team=team, token=_token(body, action))

    def answered(ack: Ack, body: dict[str, Any], outcome: AnswerOutcome) -> None:
        """Ack the click; a refusal is explained to the clicker after the ack."""
        ack()
        if not outcome.ok:
            thread_ts = (body.get("container") or {}).get("thread_ts")
            deps.after_ack(tell_refusal, deps.client, outcome, _channel(body), thread_ts)

    @app.action(blocks.SUBMIT_ACTION_ID)
    def on_submit(ack: Ack, body: dict[str, Any]) -> None:
        answered(ack, body, submit_outcome(body))

    @app.action(re.compile(rf"^{blocks.CHOOSE_ACTION_PREFIX}\d+$"))
    def on_choose(ack: Ack, body: dict[str, Any]) -> None:
        answered(ack, body, choose_outcome(body))

    @app.action(blocks.OPEN_FORM_ACTION_ID)
    def open_form(ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        """Open the form straight from the click: a `trigger_id` lives three seconds."""
        ack()
        iid = str(_clicked(body).get("value", ""))
        interrupt = store.interrupt(iid)
        if interrupt is None:
            return
        client.views_open(trigger_id=body["trigger_id"], view=blocks.modal_view(interrupt.request, iid))

    def admin_ack(ack: Ack) -> None:
        ack()

    def admin_do(body: dict[str, Any], client: WebClient) -> None:
        """Admin buttons (Home tab and failed-run messages); checked against PARLEY_ADMINS here."""
        action = _clicked(body)
        user, run_id = body["user"]["id"], str(action.get("value", ""))
        action_id = action.get("action_id", "")
        in_home = (body.get("container") or {}).get("type") == "view"
        if not deps.is_admin(user):
            log.warning("admin action refused", user=user, run_id=run_id, action=action_id)
            _tell(client, body, user, "Only Parley admins can do that.")
            return
        page = 0
        try:
            if action_id == blocks.ADMIN_CANCEL_ACTION_ID:
                admin.cancel(deps.runtime, run_id, by=user)
            elif action_id == blocks.ADMIN_RETRY_ACTION_ID:
                admin.retry(deps.runtime, run_id, by=user)
            elif action_id == blocks.ADMIN_REMIND_ACTION_ID:
                admin.remind(deps.runtime, run_id, by=user)
            elif action_id == blocks.ADMIN_PAGE_ACTION_ID:
                page = max(int(run_id or 0), 0)
            if action_id != blocks.ADMIN_PAGE_ACTION_ID:
                log.info("admin action", run_id=run_id, user=user, action=action_id)
                if not in_home:
                    _tell(client, body, user, f"Done: {action_id.removeprefix('parley_admin_')} run `{run_id}`.")
        except (AdminError, ParleyError, ValueError) as exc:
            _tell(client, body, user, f":warning: {exc}")
        if in_home:
            publish_home(deps, client, user, page=page)

    for action_id in (
        blocks.ADMIN_CANCEL_ACTION_ID,
        blocks.ADMIN_RETRY_ACTION_ID,
        blocks.ADMIN_REMIND_ACTION_ID,
        blocks.ADMIN_PAGE_ACTION_ID,
    ):
        app.action(action_id)(ack=admin_ack, lazy=[admin_do])


def _tell(client: WebClient, body: dict[str, Any], user: str, text: str) -> None:
    channel = _channel(body)
    if channel:
        client.chat_postEphemeral(
            channel=channel, user=user, text=text, thread_ts=(body.get("container") or {}).get("thread_ts")
        )
    else:
        client.chat_postMessage(channel=user, text=text)
