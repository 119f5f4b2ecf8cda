"""Slack's stop button on a run's agent session: `agent_session_stopped` cancels the run.

Slack shows the button while the session is processing. It sends the event when someone clicks
it (https://docs.slack.dev/reference/events/agent_session_stopped/). The session's status does
not change by itself. Parley cancels the run through the admins' Cancel (`RunService.cancel`).
So its open questions are locked as cancelled. The cancel-effects job tells its webhook or
Temporal workflow. Its worker then takes the session out of processing. Only someone who may
press Cancel may stop a run: a Parley admin of its workspace. Anyone else is told so privately,
and the run and its session go on.

It is acked at once. The cancel runs after the ack in a bolt lazy listener, like the admins'
buttons.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.deps import BotDeps
from bot.slack.mrkdwn import user_ref
from workers.exceptions import AdminError
from workers.logs import Log
from workers.runs import RunRecord

log = Log("parley.agent_session")
SEEN_TTL = 3600
REFUSED = "Only Parley admins can stop this run. It goes on."
ENDED = "This run has already ended, so there is nothing to stop."


def ack_stopped(ack: Ack) -> None:
    ack()


def on_stopped(
    body: dict[str, Any], event: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps
) -> None:
    """After the ack: cancel the stopped thread's run, if the clicker may."""
    channel, thread_ts, user = (str(event.get(k) or "") for k in ("channel", "thread_ts", "user"))
    runs = deps.runs
    run = runs.thread_run(channel, thread_ts) if channel and thread_ts else None
    if run is None or not user:
        log.info("stop of a thread with no run", channel=channel, user=user)
        return
    if body.get("event_id") and not runs.first_delivery(f"event:{body['event_id']}", SEEN_TTL):
        return
    fields = {**run.log_context(), "user": user}
    if not _may_cancel(deps, context, run, user):
        log.warning("stop refused: not an admin of the run's workspace", **fields)
        _tell(client, channel, thread_ts, user, REFUSED)
        return
    try:
        runs.cancel(run.id, by=user)
    except AdminError as exc:
        log.info("stop of a run that is not live", **fields, reason=str(exc))
        deps.slack.sessions.stopped_after_end(client, run, run.conversation, run.status.value)
        _tell(client, channel, thread_ts, user, ENDED)
        return
    runs.note(run.id, "stopped", user, via="slack stop button")
    log.info("run stopped from Slack's stop button", **fields)
    try:
        client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, text=f":octagonal_sign: Stopped by {user_ref(user)}."
        )
    except SlackApiError as exc:
        log.warning("could not say the run was stopped", **fields, error=str(exc.response.get("error")))


def _may_cancel(deps: BotDeps, context: BoltContext, run: RunRecord, user: str) -> bool:
    """The admins' Cancel rule: an admin whose reach covers the run (`BotDeps.admin_over`)."""
    return deps.admin_over(user, context, run.conversation)


def _tell(client: WebClient, channel: str, thread_ts: str, user: str, text: str) -> None:
    try:
        client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_ts)
    except SlackApiError as exc:
        log.warning("could not tell a refused stop", user=user, error=str(exc.response.get("error")))


def register(app: App, deps: BotDeps) -> None:
    app.event("agent_session_stopped")(ack=ack_stopped, lazy=[partial(on_stopped, deps=deps)])
