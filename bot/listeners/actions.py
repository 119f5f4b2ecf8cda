"""Clicks on a question: Submit, a one-click choice, "Answer in a form", an elicitation's "Decline".

Submit and a choice do the answer path's bounded work before the ack, and nothing else. They
decode, validate against the stored request, accept atomically and enqueue the resume. The
resumed run shows an accepted answer on the question. A refusal is told to the clicker after the
ack (`BotDeps.after_ack`). So is a form that does not open. A form Slack refuses is also
recorded in the run's history. Decline closes the question after the ack (`RunService.decline`).
It is checked as an answer is, and accepted once. It runs after the ack, since closing locks the
message and announces the close. The admins' run controls are in `bot.listeners.admin_actions`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import redis
from slack_bolt import Ack, App
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackObjectFormationError

from bot.ack_timing import timed
from bot.deps import BotDeps
from bot.slack import blocks
from bot.slack.blocks_approval import (
    APPROVE_ACTION_ID,
    APPROVE_STANDING_ACTION_ID,
    REJECT_ACTION_ID,
    reject_view,
)
from bot.slack.form_state import StateError, parse_block_id, parse_state_values
from bot.slack.limits import BlockLimitError
from bot.slack.payload_fields import channel_of, clicked, team_of, thread_of, where_of
from bot.slack.refusals import tell_refusal
from workers.interaction import Answer, Request
from workers.interaction.approval import approval_answers
from workers.logs import Log
from workers.runs import AnswerOutcome, InterruptRecord, Refusal, RefusalReason

log = Log("parley.actions")
CHOOSE_ACTION = re.compile(rf"^{blocks.CHOOSE_ACTION_PREFIX}\d+$")
FORM_TOO_SLOW = (
    ":hourglass: The form took too long to open, so Slack did not show it. Please click *Answer in a form* again."
)


def _token(body: dict[str, Any], action: dict[str, Any]) -> str:
    """A token that is the same for the same click delivered twice.

    So acceptance stays idempotent.
    """
    return f"{body.get('user', {}).get('id')}:{action.get('action_ts', '')}"


def _accept(
    body: dict[str, Any], action: dict[str, Any], interrupt: InterruptRecord, answers: list[Answer], deps: BotDeps
) -> AnswerOutcome:
    """Accept a click's answers, saying where it came from.

    That is the workspace, organisation, channel and message.
    """
    return deps.runs.answer(interrupt, body["user"]["id"], answers, token=_token(body, action), where=where_of(body))


def _open(deps: BotDeps, iid: str, user: str, team: str) -> InterruptRecord | AnswerOutcome:
    """The clicked question's record, or the refusal to answer with.

    Refusals are: gone, not the clicker's, or Redis down.
    """
    try:
        return deps.runs.question(iid, user)
    except redis.RedisError:
        return deps.runs.unavailable(iid, user, team)


def submit_outcome(body: dict[str, Any], deps: BotDeps) -> AnswerOutcome:
    """Submit: decode the form's state against the stored request, then accept."""
    action = clicked(body)
    iid, user, team = str(action.get("value", "")), body["user"]["id"], team_of(body)
    interrupt = _open(deps, iid, user, team)
    if isinstance(interrupt, AnswerOutcome):
        return interrupt
    try:
        answers = parse_state_values(interrupt.request, iid, (body.get("state") or {}).get("values") or {})
    except StateError as exc:
        return AnswerOutcome.refused(iid, user, Refusal(RefusalReason.INVALID, errors={"form": str(exc)}))
    return _accept(body, action, interrupt, answers, deps)


def choose_outcome(body: dict[str, Any], deps: BotDeps) -> AnswerOutcome:
    """A one-click option button: its value is the choice."""
    action = clicked(body)
    ref = parse_block_id(str(action.get("block_id", "")))
    iid = ref[1] if ref and ref[0] == "qc" else ""  # (kind, iid, version, item_id)
    user, team = body["user"]["id"], team_of(body)
    interrupt = _open(deps, iid, user, team)
    if isinstance(interrupt, AnswerOutcome):
        return interrupt
    answers = [Answer(id=interrupt.request.items[0].id, choice=str(action.get("value", "")))]
    return _accept(body, action, interrupt, answers, deps)


def approve_outcome(body: dict[str, Any], deps: BotDeps, *, standing: bool = False) -> AnswerOutcome:
    """Approve: the proposed args approved as they are.

    With `standing`, as a standing approval, when offered.
    """
    action = clicked(body)
    iid, user, team = str(action.get("value", "")), body["user"]["id"], team_of(body)
    interrupt = _open(deps, iid, user, team)
    if isinstance(interrupt, AnswerOutcome):
        return interrupt
    if interrupt.request.approval is None:
        not_approval = Refusal(RefusalReason.INVALID, errors={"form": "this question is no approval"})
        return AnswerOutcome.refused(iid, user, not_approval)
    if standing and not interrupt.request.approval.standing:
        not_offered = Refusal(RefusalReason.INVALID, errors={"form": "this approval offers no standing approval"})
        return AnswerOutcome.refused(iid, user, not_offered)
    answers = approval_answers(interrupt.request, [], approve=True, standing=standing)
    return _accept(body, action, interrupt, answers, deps)


def _answered(ack: Ack, body: dict[str, Any], outcome: AnswerOutcome, client: WebClient, deps: BotDeps) -> None:
    """Ack the click, explaining any refusal to the clicker after the ack.

    The explanation uses the token of the installation bolt authorized the click for. That is the
    clicker's workspace.
    """
    ack()
    if not outcome.ok:
        deps.after_ack(tell_refusal, client, outcome, channel_of(body), thread_of(body))


@timed("submit")
def on_submit(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    _answered(ack, body, submit_outcome(body, deps), client, deps)


@timed("choice")
def on_approve(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    _answered(ack, body, approve_outcome(body, deps), client, deps)


@timed("choice")
def on_approve_standing(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    _answered(ack, body, approve_outcome(body, deps, standing=True), client, deps)


@timed("choice")
def on_choose(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    _answered(ack, body, choose_outcome(body, deps), client, deps)


def decline_outcome(body: dict[str, Any], deps: BotDeps) -> AnswerOutcome:
    """Decline: close the question as cancelled by the clicker, if they may answer."""
    action = clicked(body)
    iid, user, team = str(action.get("value", "")), body["user"]["id"], team_of(body)
    interrupt = _open(deps, iid, user, team)
    if isinstance(interrupt, AnswerOutcome):
        return interrupt
    return deps.runs.decline(interrupt, user, where=where_of(body))


def _declined(body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    outcome = decline_outcome(body, deps)
    if not outcome.ok:
        tell_refusal(client, outcome, channel_of(body), thread_of(body))


def on_decline(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    """Ack at once, then decline after the ack.

    Declining is a close, the message's lock, and the close's announcements.
    """
    ack()
    deps.after_ack(_declined, body, client, deps)


def form_refused_text(request: Request, why: str) -> str:
    """What the clicker reads when the form cannot open: why, and where else to answer."""
    text = f":warning: The form could not be opened: {why}."
    if not request.has_secret:  # a question asking a secret has no inputs in its message
        text += " You can answer in the question's message instead, with the inputs there."
    return text


def _tell_clicker(client: WebClient, body: dict[str, Any], text: str, flog: Log) -> None:
    """Say `text` to the clicker alone, beside the question they clicked."""
    channel = channel_of(body)
    if not channel:
        return
    try:
        client.chat_postEphemeral(channel=channel, user=body["user"]["id"], thread_ts=thread_of(body), text=text)
    except SlackApiError as exc:
        flog.warning("could not tell the clicker the form did not open", error=exc.response.get("error"))


def _since_click(action: dict[str, Any], at: float) -> float | None:
    """Seconds from the click (Slack's `action_ts`) to `at`, when Slack gave it."""
    try:
        return round(at - float(action.get("action_ts") or ""), 3)
    except ValueError:
        return None


def on_open_form(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    """The question's form (an approval's Edit…), opened from the click."""
    _open_modal(ack, body, client, deps, blocks.modal_view)


def on_reject(ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    """Reject on an approval opens a modal asking an optional reason.

    It opens from the click.
    """
    _open_modal(ack, body, client, deps, lambda request, iid, channel, **_: reject_view(request, iid, channel=channel))


def _open_modal(
    ack: Ack, body: dict[str, Any], client: WebClient, deps: BotDeps, build: Callable[..., dict[str, Any]]
) -> None:
    """Open the form straight from the click, since a `trigger_id` lives three seconds.

    A form that does not open is never silent. If the trigger expired first, the clicker is asked to
    click again. Any other refusal tells them the form could not be opened. It is recorded in the
    run's history with Slack's error and `response_metadata.messages`.
    """
    ack()
    action = clicked(body)
    iid, trigger_id, user = str(action.get("value", "")), body.get("trigger_id"), body["user"]["id"]
    interrupt = deps.runs.question(iid, user)
    if isinstance(interrupt, AnswerOutcome):  # not theirs (or gone): Submit tells them why
        deps.after_ack(tell_refusal, client, interrupt, channel_of(body), thread_of(body))
        return
    if not trigger_id:  # without a trigger Slack opens no modal
        return
    flog = log.bind(run_id=interrupt.run_id, interrupt_id=iid, team=team_of(body), channel=channel_of(body), user=user)
    history = deps.runs.note
    try:
        # Opened from an `ask_each` message (a group's id), the form is one person's own: not reassignable.
        view = build(interrupt.request, iid, channel=channel_of(body), reassignable=iid == interrupt.id)
    except (BlockLimitError, SlackObjectFormationError) as exc:
        problems = exc.problems if isinstance(exc, BlockLimitError) else [str(exc)]
        flog.warning("the form is beyond Slack's limits", problems=problems)
        history(interrupt.run_id, "form refused", user, interrupt_id=iid, messages=problems)
        _tell_clicker(client, body, form_refused_text(interrupt.request, "it holds more than Slack shows"), flog)
        return
    called = time.time()
    try:
        client.views_open(trigger_id=trigger_id, view=view)
    except SlackApiError as exc:
        error = str(exc.response.get("error") or "no error given")
        timing = {"click_to_open_s": _since_click(action, called), "open_took_s": round(time.time() - called, 3)}
        if error == "expired_trigger_id":  # the click came more than 3 s before views.open: a new click works
            flog.warning("the form opened too late for its trigger", error=error, **timing)
            _tell_clicker(client, body, FORM_TOO_SLOW, flog)
            return
        messages = [str(m) for m in (exc.response.get("response_metadata") or {}).get("messages") or []]
        flog.warning("Slack refused the form", error=error, messages=messages, **timing)
        history(interrupt.run_id, "form refused", user, interrupt_id=iid, error=error, messages=messages)
        _tell_clicker(client, body, form_refused_text(interrupt.request, f"Slack answered `{error}`"), flog)


def register(app: App, deps: BotDeps) -> None:
    app.action(blocks.SUBMIT_ACTION_ID)(partial(on_submit, deps=deps))
    app.action(CHOOSE_ACTION)(partial(on_choose, deps=deps))
    app.action(blocks.OPEN_FORM_ACTION_ID)(partial(on_open_form, deps=deps))
    app.action(blocks.DECLINE_ACTION_ID)(partial(on_decline, deps=deps))
    app.action(APPROVE_ACTION_ID)(partial(on_approve, deps=deps))
    app.action(APPROVE_STANDING_ACTION_ID)(partial(on_approve_standing, deps=deps))
    app.action(REJECT_ACTION_ID)(partial(on_reject, deps=deps))
