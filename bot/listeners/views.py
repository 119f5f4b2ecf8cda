"""The "Answer in a form" modal: its submission is accepted before the ack, errors inline.

Some refusals Slack can show beside a field: a missing or invalid answer, or Redis unreachable.
These keep the form open with what was typed. Any other refusal replaces the form with the
reason.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import redis
from slack_bolt import Ack, App
from slack_sdk.models.blocks import MarkdownTextObject, SectionBlock
from slack_sdk.models.views import View

from bot.ack_timing import timed
from bot.deps import BotDeps
from bot.slack import blocks
from bot.slack.blocks_approval import REJECT_CALLBACK_ID
from bot.slack.form_state import StateError, parse_state_values
from bot.slack.limits import SECTION_MAX
from bot.slack.mrkdwn import cut_escaped, truncate
from bot.slack.payload_fields import enterprise_of, team_of
from bot.slack.refusals import refusal_text
from workers.interaction.approval import REASON_ID, approval_answers
from workers.runs import AnswerOutcome, RefusalReason, Where

ERROR_MAX = 150
"""Slack shows at most this many characters of an inline field error."""


@timed("form")
def on_form_submission(ack: Ack, body: dict[str, Any], deps: BotDeps) -> None:
    """Accept the form's answers.

    The channel it was opened from comes back in `private_metadata`. An approval's form (Edit…)
    holds its editable arguments. Submitting it approves them as edited.
    """
    _submitted(ack, body, deps, rejecting=False)


@timed("form")
def on_reject_submission(ack: Ack, body: dict[str, Any], deps: BotDeps) -> None:
    """An approval's Reject form: rejects it, with the reason given (if any)."""
    _submitted(ack, body, deps, rejecting=True)


def _submitted(ack: Ack, body: dict[str, Any], deps: BotDeps, *, rejecting: bool) -> None:
    view = body.get("view") or {}
    iid, _, channel = str(view.get("private_metadata", "")).partition("|")
    user, team = body["user"]["id"], team_of(body)
    inputs = [b.get("block_id") for b in view.get("blocks") or [] if b.get("type") == "input"]
    first_block = next((b for b in inputs if isinstance(b, str)), None)
    try:
        found = deps.runs.question(iid, user)
    except redis.RedisError:
        # Keep the form and what was typed in it; the person submits again.
        text = refusal_text(deps.runs.unavailable(iid, user, team)).removeprefix(":warning: ")
        ack(response_action="errors", errors={first_block or "form": truncate(text, ERROR_MAX)})
        return
    if isinstance(found, AnswerOutcome) and found.reason is RefusalReason.UNKNOWN:
        ack(response_action="errors", errors={first_block or "form": "This question no longer exists."})
        return
    if isinstance(found, AnswerOutcome):  # a question put to each person, and this one was not asked
        ack(response_action="update", view=_notice_view(refusal_text(found)))
        return
    interrupt = found
    try:
        answers = parse_state_values(interrupt.request, iid, (view.get("state") or {}).get("values") or {}, prefix="f")
    except StateError as exc:
        ack(response_action="errors", errors={first_block or "form": truncate(str(exc), ERROR_MAX)})
        return
    if interrupt.request.approval is not None:
        reason = next((a.free_text for a in answers if a.id == REASON_ID), None)
        answers = approval_answers(interrupt.request, answers, approve=not rejecting, reason=reason)
    token = f"{user}:{view.get('id')}:{view.get('hash')}"
    where = Where(team=team, enterprise=enterprise_of(body), channel=channel or None)
    outcome = deps.runs.answer(interrupt, user, answers, token=token, where=where)
    if outcome.ok:
        ack()  # the resumed run locks the question message
        return
    if outcome.reason in (RefusalReason.UNAVAILABLE, RefusalReason.UNCONFIRMED):  # keep the form: submit again
        text = refusal_text(outcome).removeprefix(":warning: ")
        ack(response_action="errors", errors={first_block or "form": truncate(text, ERROR_MAX)})
        return
    if outcome.refusal is not None and outcome.refusal.reason is RefusalReason.INVALID:
        errors = outcome.refusal.errors
        ids = {i.id for i in interrupt.request.items}
        field_errors = {f"f|{iid}|{k}": v for k, v in errors.items() if k in ids}
        if field_errors:
            ack(response_action="errors", errors=field_errors)
            return
    ack(response_action="update", view=_notice_view(refusal_text(outcome)))


def _notice_view(text: str) -> dict[str, Any]:
    return View(
        type="modal",
        title="Answer",
        close="Close",
        blocks=[SectionBlock(text=MarkdownTextObject(text=cut_escaped(text, SECTION_MAX)))],
    ).to_dict()


def register(app: App, deps: BotDeps) -> None:
    app.view(blocks.FORM_CALLBACK_ID)(partial(on_form_submission, deps=deps))
    app.view(REJECT_CALLBACK_ID)(partial(on_reject_submission, deps=deps))
