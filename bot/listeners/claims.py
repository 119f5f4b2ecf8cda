""" "Claim" and "Release" on a `claim` question: one person takes it, and may give it back.

They are acked at once. The work runs after the ack in a bolt lazy listener, since it updates
the question's message through the Web API. The store's script decides who wins a race of clicks
(`RunService.claim`). A refusal writes nothing, and is told to the clicker alone.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.deps import BotDeps
from bot.slack.blocks_question import CLAIM_ACTION_ID, RELEASE_ACTION_ID
from bot.slack.payload_fields import channel_of, clicked, thread_of, where_of
from bot.slack.refusals import refusal_text
from workers.logs import Log
from workers.runs import AnswerOutcome, ClaimRefused, InterruptRecord

log = Log("parley.actions")


def ack_claim(ack: Ack) -> None:
    ack()


def do_claim(body: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps, *, releasing: bool) -> None:
    """After the ack: claim or release the button's question, or tell the clicker why not."""
    by, iid = body["user"]["id"], str(clicked(body).get("value") or "")
    interrupt = deps.runs.interrupt(iid)
    if interrupt is None:
        _tell(client, body, "This question no longer exists.")
        return
    ctx = {"run_id": interrupt.run_id, "interrupt_id": iid, "user": by, "team": interrupt.team}
    if not acts_here(client, body, deps, interrupt):
        log.info("claim refused: not where the question is", **ctx, channel=channel_of(body), releasing=releasing)
        return
    try:
        if releasing:
            deps.runs.release(interrupt, by=by, is_admin=admins_question(deps, context, by, interrupt))
        else:
            deps.runs.claim(interrupt, by=by)
    except ClaimRefused as exc:
        log.info("claim refused", **ctx, channel=channel_of(body), why=str(exc), releasing=releasing)
        _tell(client, body, f":warning: {exc}")


def acts_here(client: WebClient, body: dict[str, Any], deps: BotDeps, interrupt: InterruptRecord) -> bool:
    """Whether a click may act on `interrupt` where it was made; else the clicker is told why.

    The place is checked as for an answer (`RunService.misplaced`): its workspace, or its own shared
    channel, and its own message.
    """
    refusal = deps.runs.misplaced(interrupt, where_of(body))
    if refusal is not None:
        _tell(client, body, refusal_text(AnswerOutcome.refused(interrupt.id, body["user"]["id"], refusal)))
    return refusal is None


def admins_question(deps: BotDeps, context: BoltContext, user: str, interrupt: InterruptRecord) -> bool:
    """Whether `user` admins the question's run: an admin of another workspace is not, even in a shared channel."""
    run = deps.runs.find(interrupt.run_id)
    return run is not None and deps.admin_over(user, context, run.conversation)


def _tell(client: WebClient, body: dict[str, Any], text: str) -> None:
    channel = channel_of(body)
    if channel:
        client.chat_postEphemeral(channel=channel, user=body["user"]["id"], text=text, thread_ts=thread_of(body))


def register(app: App, deps: BotDeps) -> None:
    app.action(CLAIM_ACTION_ID)(ack=ack_claim, lazy=[partial(do_claim, deps=deps, releasing=False)])
    app.action(RELEASE_ACTION_ID)(ack=ack_claim, lazy=[partial(do_claim, deps=deps, releasing=True)])
