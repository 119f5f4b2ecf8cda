"""Confirm and Edit… on answers read from a plain-words reply, for the replier alone to decide.

Confirm takes the proposal once, for the replier alone. It accepts the answers exactly as a
Submit would, with the click's workspace and channel. Edit… opens the question's form, filled in
with what was read. Anyone else's click changes nothing, and they are told why privately.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App
from slack_sdk import WebClient
from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject

from bot.deps import BotDeps
from bot.slack import blocks
from bot.slack.mrkdwn import user_ref
from bot.slack.payload_fields import channel_of, clicked, enterprise_of, team_of, thread_of
from bot.slack.refusals import refusal_text
from bot.slack.reply_reading import CONFIRM_ACTION_ID, EDIT_ACTION_ID
from workers.interaction import Answer, Request
from workers.logs import Log
from workers.runs import Where

log = Log("parley.replies")
NOT_YOURS = "Only the person who replied can confirm what was read from it, and only once."


def on_confirm(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    """Accept the proposal's answers for the replier.

    The proposal message says what happened.
    """
    action, user = clicked(body), body["user"]["id"]
    proposal = deps.runs.take_proposal(str(action.get("value") or ""), user)
    if proposal is None:
        ack()
        deps.after_ack(_tell, client, body, NOT_YOURS)
        return
    interrupt = deps.runs.interrupt(proposal.interrupt_id)
    if interrupt is None:
        ack()
        deps.after_ack(_tell, client, body, "This question no longer exists.")
        return
    where = Where(team=team_of(body), enterprise=enterprise_of(body), channel=channel_of(body))
    outcome = deps.runs.answer(interrupt, user, proposal.answers, token=f"proposal:{proposal.id}", where=where)
    ack()
    said = f"Confirmed by {user_ref(user)}." if outcome.ok else f"Not answered: {refusal_text(outcome)}"
    log.info(
        "reply confirmed" if outcome.ok else "confirmed reply refused",
        run_id=interrupt.run_id,
        interrupt_id=interrupt.id,
        user=user,
        channel=channel_of(body),
    )
    deps.after_ack(_settle, client, body, said)


def on_edit(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    """Open the question's form, filled in with what was read from the reply."""
    ack()
    action, user = clicked(body), body["user"]["id"]
    proposal = deps.runs.proposal(str(action.get("value") or ""))
    interrupt = deps.runs.interrupt(proposal.interrupt_id) if proposal and proposal.user == user else None
    if proposal is None or interrupt is None or not body.get("trigger_id"):
        deps.after_ack(_tell, client, body, NOT_YOURS)
        return
    filled = prefilled(interrupt.request, proposal.answers)
    client.views_open(
        trigger_id=body["trigger_id"], view=blocks.modal_view(filled, interrupt.id, channel=channel_of(body))
    )


def prefilled(request: Request, answers: list[Answer]) -> Request:
    """`request` with each item defaulting to what was read, so the form opens filled."""
    read = {a.id: a.value for a in answers}
    items = [i.model_copy(update={"default": read[i.id]}) if i.id in read else i for i in request.items]
    return request.model_copy(update={"items": items})


def _settle(client: WebClient, body: dict[str, Any], said: str) -> None:
    """Replace the proposal's buttons with what became of it."""
    message, channel = body.get("message") or {}, channel_of(body)
    if not channel or not message.get("ts"):
        return
    kept = [b for b in message.get("blocks") or [] if b.get("type") != "actions"]
    kept.append(ContextBlock(elements=[MarkdownTextObject(text=said)]).to_dict())
    client.chat_update(channel=channel, ts=str(message["ts"]), text=said, blocks=kept)


def _tell(client: WebClient, body: dict[str, Any], text: str) -> None:
    channel = channel_of(body)
    if channel:
        client.chat_postEphemeral(channel=channel, user=body["user"]["id"], text=text, thread_ts=thread_of(body))


def register(app: App, deps: BotDeps) -> None:
    app.action(CONFIRM_ACTION_ID)(partial(on_confirm, deps=deps))
    app.action(EDIT_ACTION_ID)(partial(on_edit, deps=deps))
