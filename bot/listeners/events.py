"""Events: the App Home opening, and thread replies that answer a pending one-item question."""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext
from slack_sdk import WebClient

from bot.deps import BotDeps
from bot.home_tab import publish_home
from bot.slack.question_lookup import lookup
from bot.slack.refusals import tell_refusal
from workers.interaction import Answer, ChoiceError, Item, ItemType, resolve_choice
from workers.logs import Log
from workers.runtime.acceptance import AnswerOutcome, try_accept
from workers.store.records import InterruptRecord, RefusalReason, RunStatus
from workers.store.refusal import Refusal

log = Log("parley.events")
SEEN_TTL = 3600
PEOPLE_SUBTYPES = frozenset({"thread_broadcast", "file_share"})
"""Replies with a subtype that are still a person speaking: "Also send to channel", and a reply
with files attached (its text answers). Edits, deletions and bots' messages are not."""


def _first_delivery(deps: BotDeps, body: dict[str, Any]) -> bool:
    """Slack redelivers an event it thinks was not acked; handle each `event_id` once."""
    event_id = body.get("event_id")
    if not event_id:
        return True
    return deps.runtime.store.first_delivery(f"event:{event_id}", SEEN_TTL)


def ack_home_opened(ack: Ack) -> None:
    ack()


def publish_home_tab(event: dict[str, Any], client: WebClient, context: BoltContext, deps: BotDeps) -> None:
    """After the ack: publish the person's Home tab (the Messages tab opening needs nothing)."""
    if event.get("tab", "home") == "home":
        publish_home(deps, client, event["user"], context=context)


def reply_answerable(item: Item) -> bool:
    """Whether a typed reply can answer `item` when it is the question's only item: a choice, or a
    required yes/no or number."""
    return item.type is ItemType.SELECT or (item.required and item.type in (ItemType.BOOLEAN, ItemType.NUMBER))


def reply_answer(item: Item, text: str) -> Answer:
    """The answer a typed reply gives `item`: an option it names (`ChoiceError` when it names none),
    or its text, which validation reads as yes/no or a number and refuses by label if it is neither."""
    if item.type is ItemType.SELECT:
        return Answer(id=item.id, choice=resolve_choice(item, text))
    return Answer(id=item.id, free_text=text)


def on_thread_reply(ack: Ack, body: dict[str, Any], event: dict[str, Any], client: WebClient, deps: BotDeps) -> None:
    """A threaded reply ("2", "the second one", "HBO"; "yes"; "3") to a pending one-item question.

    Accepted before the ack, like a click; a refusal is told after the ack. The run is found
    by channel and thread alone: in a shared channel the envelope's `team_id` may be another
    organisation's. The answer is accepted with the replier's own team (`user_team`).
    """
    store = deps.runtime.store
    addressed = all(event.get(k) for k in ("thread_ts", "user", "channel"))
    spoken = event.get("subtype") in (None, *PEOPLE_SUBTYPES) and not event.get("bot_id")
    if not spoken or not addressed:
        ack()
        return
    team = event.get("user_team") or event.get("team") or body.get("team_id") or ""
    run_id = store.thread_run(event["channel"], event["thread_ts"])
    run = store.find(run_id) if run_id else None
    if run is None or run.status is not RunStatus.PAUSED or not _first_delivery(deps, body):
        ack()
        return
    # A question put to each person separately is answered by the replier's own; with several
    # questions at once (ask_all, ask_any) a reply names none of them, so it is left alone.
    found = lookup(store, run.interrupt, str(event["user"]))
    interrupt = found if isinstance(found, InterruptRecord) else None
    items = interrupt.request.items if interrupt else []
    if interrupt is not None and interrupt.request.has_secret:
        # Never read: the text may be the secret. The person is pointed to the form instead.
        ack()
        refused = AnswerOutcome.refused(interrupt.id, event["user"], Refusal(RefusalReason.FORM_ONLY))
        log.info("thread reply to a secret question refused", **{**run.log_context(), "user": event["user"]})
        deps.after_ack(tell_refusal, deps.client, refused, event["channel"], event.get("thread_ts"))
        return
    if interrupt is None or len(items) != 1 or not reply_answerable(items[0]):
        ack()
        return
    user = event["user"]
    try:
        answers = [reply_answer(items[0], event.get("text") or "")]
    except ChoiceError as exc:
        outcome = AnswerOutcome.refused(interrupt.id, user, Refusal(RefusalReason.AMBIGUOUS, message=str(exc)))
    else:
        enterprise = body.get("enterprise_id") or None
        token = f"{user}:{event.get('ts')}"
        outcome = try_accept(
            deps.runtime,
            interrupt,
            user,
            answers,
            team=team,
            enterprise=enterprise,
            channel=event["channel"],
            token=token,
        )
    ack()
    if not outcome.ok:
        deps.after_ack(tell_refusal, client, outcome, event["channel"], event.get("thread_ts"))


def register(app: App, deps: BotDeps) -> None:
    app.event("app_home_opened")(ack=ack_home_opened, lazy=[partial(publish_home_tab, deps=deps)])
    app.event("message")(partial(on_thread_reply, deps=deps))
