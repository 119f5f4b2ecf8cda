""" "Reassign…" on a question's message or form: hand the question to another person.

It is acked at once. The work runs after the ack in a bolt lazy listener, because it calls the
Web API. The calls are `users.info` to refuse a bot, the question's update, and the new
assignee's DM. `RunService.reassign` decides who may reassign: an assignee, or an admin. It also
decides to whom: never oneself, a bot, or someone already asked. It tells the run's host too:
the Slack host, or for API and MCP questions the API host. That host keeps its "Asked by" line
and its Decline button. A refusal writes nothing. It is told to the clicker alone, beside the
message or in the form.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock
from slack_sdk.models.views import View

from bot.deps import BotDeps
from bot.listeners.claims import admins_question
from bot.slack.blocks_question import REASSIGN_ACTION_ID
from bot.slack.form_state import parse_block_id
from bot.slack.mrkdwn import user_ref
from bot.slack.payload_fields import channel_of, clicked, thread_of, where_of
from bot.slack.refusals import refusal_text
from workers.logs import Log
from workers.runs import AnswerOutcome, InterruptState, ReassignRefused

log = Log("parley.actions")


def ack_reassign(ack: Ack) -> None:
    ack()


def do_reassign(body: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps) -> None:
    """After the ack: check the pick, hand over the question, tell the new assignee and clicker."""
    action = clicked(body)
    by, to = body["user"]["id"], str(action.get("selected_user") or "")
    ref = parse_block_id(str(action.get("block_id", "")))
    iid = ref[1] if ref and ref[0] in ("qr", "fr") else ""
    interrupt = deps.runs.interrupt(iid)
    if interrupt is None:
        _tell(client, body, "This question no longer exists.")
        return
    if not to:
        return  # the selection was cleared
    refusal = deps.runs.misplaced(interrupt, where_of(body))  # as an answer's place is checked
    if refusal is not None:
        _tell(client, body, refusal_text(AnswerOutcome.refused(iid, by, refusal)))
        return
    try:
        updated = deps.runs.reassign(
            interrupt,
            by=by,
            to=to,
            is_admin=admins_question(deps, context, by, interrupt),
            to_is_bot=to != by and _is_bot(client, to),
        )
    except ReassignRefused as exc:
        ctx = {"run_id": interrupt.run_id, "interrupt_id": iid, "user": by, "team": interrupt.team}
        log.info("reassignment refused", **ctx, channel=channel_of(body), to=to, why=str(exc))
        _tell(client, body, f":warning: {exc}")
        return
    except LookupError:
        _tell(client, body, ":warning: Slack does not know that person; pick someone else.")
        return
    if updated.state is not InterruptState.OPEN:  # answered (or closed) as it was handed over: nobody was told
        closed = updated.state.value.replace("_", " ")
        _tell(client, body, f"This question closed meanwhile ({closed}), so nobody was told.")
        return
    _tell(client, body, f"Reassigned to {user_ref(to)}; they have been told." + _yours_no_more(by, updated.assignees))


def _yours_no_more(by: str, assignees: list[str]) -> str:
    return "" if by in assignees else " You can no longer answer it."


def _is_bot(client: WebClient, user: str) -> bool:
    """Whether Slack says `user` is a bot, Slackbot included.

    Raises LookupError when Slack knows no such user.
    """
    try:
        info = client.users_info(user=user)["user"]
    except SlackApiError as exc:
        if exc.response.get("error") == "user_not_found":
            raise LookupError(user) from exc
        raise
    return bool(info.get("is_bot")) or info.get("id") == "USLACKBOT"


def _tell(client: WebClient, body: dict[str, Any], text: str) -> None:
    """Tell the clicker alone, beside the question's message or replacing the form.

    The form is the one they reassigned from.
    """
    view = body.get("view") or {}
    if (body.get("container") or {}).get("type") == "view" and view.get("id"):
        notice = View(
            type="modal", title="Reassign", close="Close", blocks=[SectionBlock(text=MarkdownTextObject(text=text))]
        )
        client.views_update(view_id=view["id"], view=notice.to_dict())
        return
    channel = channel_of(body)
    if channel:
        client.chat_postEphemeral(channel=channel, user=body["user"]["id"], text=text, thread_ts=thread_of(body))


def register(app: App, deps: BotDeps) -> None:
    app.action(REASSIGN_ACTION_ID)(ack=ack_reassign, lazy=[partial(do_reassign, deps=deps)])
