"""Events: App Home opening, and thread replies answering a question's one required item."""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.deps import BotDeps
from bot.home_tab import publish_home
from bot.slack.mrkdwn import unescape
from bot.slack.refusals import ONE_FIELD_DETAIL, tell_refusal
from bot.slack.reply_reading import Reading, Reply
from workers.interaction import ChoiceError, reply_answers, reply_item
from workers.logs import Log
from workers.runs import AnswerOutcome, InterruptRecord, Refusal, RefusalReason, RunRecord, RunStatus, Where

log = Log("parley.events")
SEEN_TTL = 3600
HINT_TTL = 90 * 86400
"""How long a person is remembered as told that a question needs its form: a question's longest life."""
PEOPLE_SUBTYPES = frozenset({"thread_broadcast", "file_share"})
"""Replies with a subtype that are still a person speaking: "Also send to channel", and a reply
with files attached (its text answers). Edits, deletions and bots' messages are not."""


def _first_delivery(deps: BotDeps, body: dict[str, Any]) -> bool:
    """Handle each `event_id` once, since Slack redelivers events it thinks unacked."""
    event_id = body.get("event_id")
    if not event_id:
        return True
    return deps.runs.first_delivery(f"event:{event_id}", SEEN_TTL)


def ack_home_opened(ack: Ack) -> None:
    ack()


def publish_home_tab(event: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps) -> None:
    """After the ack: publish the person's Home tab.

    The Messages tab opening needs nothing.
    """
    if event.get("tab", "home") == "home":
        publish_home(deps, client, event["user"], context=context)


def on_thread_reply(ack: Ack, body: dict[str, Any], event: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    """A threaded reply to a pending question, like "2", "the second one", "HBO", "yes" or "3".

    It answers the question's one required choice, yes/no or number (`reply_item`). On any other
    question, the person is told once, privately, to use Submit or the form.

    It is accepted before the ack, like a click, and a refusal is told after the ack. The run is
    found by channel and thread alone. In a shared channel, the envelope's `team_id` may be another
    organisation's. The answer is accepted with the replier's own team (`user_team`).
    """
    runs = deps.runs
    addressed = all(event.get(k) for k in ("thread_ts", "user", "channel"))
    spoken = event.get("subtype") in (None, *PEOPLE_SUBTYPES) and not event.get("bot_id")
    if not spoken or not addressed:
        ack()
        return
    team = event.get("user_team") or event.get("team") or body.get("team_id") or ""
    run = runs.thread_run(event["channel"], event["thread_ts"])
    if run is None or run.status is not RunStatus.PAUSED or not _first_delivery(deps, body):
        ack()
        return
    # A question put to each person separately is answered by the replier's own; with several
    # questions at once (ask_all, ask_any) a reply names none of them, so it is left alone.
    found = runs.question(run.interrupt, str(event["user"]))
    interrupt = found if isinstance(found, InterruptRecord) else None
    if interrupt is not None and interrupt.request.has_secret:
        # Never read: the text may be the secret. The person is pointed to the form instead.
        ack()
        refused = AnswerOutcome.refused(interrupt.id, event["user"], Refusal(RefusalReason.FORM_ONLY))
        log.info("thread reply to a secret question refused", **{**run.log_context(), "user": event["user"]})
        deps.after_ack(tell_refusal, deps.client, refused, event["channel"], event.get("thread_ts"))
        return
    if interrupt is None:
        ack()
        return
    user = event["user"]
    asked = not interrupt.assignees or user in interrupt.assignees
    item = reply_item(interrupt.request)
    if item is None and _read_by_model(deps, client, run, interrupt, event) is Reading.QUEUED:
        ack()
        return
    if item is None:
        # Told once per person and question: a conversation in the thread is not nagged.
        ack()
        if runs.first_delivery(_hint_key(interrupt, user), HINT_TTL):
            one = len(interrupt.request.items) == 1  # e.g. an optional yes/no, which a reply would only guess at
            refusal = Refusal(RefusalReason.SEVERAL_FIELDS, message=ONE_FIELD_DETAIL if one else "")
            refused = AnswerOutcome.refused(interrupt.id, user, refusal)
            log.info("thread reply to a question with several fields", **{**run.log_context(), "user": user})
            deps.after_ack(tell_refusal, deps.client, refused, event["channel"], event.get("thread_ts"))
        return
    try:
        answers = reply_answers(interrupt.request, item, unescape(str(event.get("text") or "")))
    except ChoiceError as exc:
        reading = _read_by_model(deps, client, run, interrupt, event)
        if reading is Reading.QUEUED:
            ack()
            return
        if not asked:  # it names no option, and its writer was not asked: talk, not an answer
            ack()
            return
        if reading is Reading.SPENT and not runs.first_delivery(_hint_key(interrupt, user), HINT_TTL):
            ack()  # past the replier's readings: told once per question already, chatter is not answered
            return
        outcome = AnswerOutcome.refused(interrupt.id, user, Refusal(RefusalReason.AMBIGUOUS, message=str(exc)))
    else:
        enterprise = body.get("enterprise_id") or None
        token = f"{user}:{event.get('ts')}"
        where = Where(team=team, enterprise=enterprise, channel=event["channel"])
        outcome = runs.answer(interrupt, user, answers, token=token, where=where)
    ack()
    if not outcome.ok and not asked and not runs.first_delivery(f"reply-not-asked:{interrupt.id}:{user}", HINT_TTL):
        return  # someone not asked is told once per question that it is not theirs, not at every reply
    if not outcome.ok:
        deps.after_ack(tell_refusal, client, outcome, event["channel"], event.get("thread_ts"))


def _read_by_model(
    deps: BotDeps, client: WebClient, run: RunRecord, interrupt: InterruptRecord, event: dict[str, Any]
) -> Reading | None:
    """Hand a reply no rule reads to the model, if the replier may answer.

    This needs `PARLEY_LLM_ANSWERS=on`. The reading, and what it proposes, come after the ack.
    Nothing is accepted until the replier confirms. None when reading is off or the replier was
    not asked; otherwise what the reader did. A reply not read takes the rule path. Past the
    replier's readings, they hear "nothing was answered" once per question, from either path.
    """
    user = str(event["user"])
    if deps.reader is None or (interrupt.assignees and user not in interrupt.assignees):
        return None
    reply = Reply(
        interrupt=interrupt,
        user=user,
        text=unescape(str(event.get("text") or "")),
        channel=str(event["channel"]),
        thread_ts=str(event["thread_ts"]),
        log_context={**run.log_context(), "interrupt_id": interrupt.id, "user": user},
        first_told=partial(deps.runs.first_delivery, _hint_key(interrupt, user), HINT_TTL),
    )
    return deps.reader.read(client, reply)


def _hint_key(interrupt: InterruptRecord, user: str) -> str:
    """Once per question and person: told that a reply needs the form, or was not read."""
    return f"reply-hint:{interrupt.id}:{user}"


def register(app: App, deps: BotDeps) -> None:
    app.event("app_home_opened")(ack=ack_home_opened, lazy=[partial(publish_home_tab, deps=deps)])
    app.event("message")(partial(on_thread_reply, deps=deps))
