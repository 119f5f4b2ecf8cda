"""Accepting an answer from any Slack surface, and telling the clicker the outcome.

The ack half (`accept_from_slack`) does only Redis work: decode, validate against
the stored request, accept atomically, enqueue. Its outcome is left in the bolt
context as plain JSON so the lazy half (`tell_refusal`) can explain a refusal
ephemerally after Slack has its ack. The worker that resumes the run locks the
question message, so nothing about a success waits on the Web API here.
"""

from __future__ import annotations

from typing import Any

import redis
from slack_sdk import WebClient

from bot.deps import BotDeps
from bot.slack.mrkdwn import date_token, escape, user_ref
from workers.interaction import Answer
from workers.logs import Log
from workers.runtime.acceptance import AcceptRefused, accept
from workers.store.records import InterruptRecord

log = Log("parley.answers")
OUTCOME = "parley_outcome"


def accept_from_slack(
    deps: BotDeps, interrupt: InterruptRecord, user: str, team: str | None, answers: list[Answer], token: str
) -> dict[str, Any]:
    """Try to accept; returns a JSON outcome: {"ok": bool, "reason", "detail", ...}."""
    iid = interrupt.id
    try:
        accepted = accept(deps.runtime, interrupt, user, answers, team=team, token=token)
    except AcceptRefused as exc:
        return {"ok": False, "iid": iid, "user": user, "reason": exc.reason, "detail": _jsonable(exc.detail)}
    except redis.RedisError:
        return unavailable(iid, user, team)
    return {"ok": True, "iid": iid, "user": user, "run_id": accepted.run_id}


def unavailable(iid: str, user: str, team: str | None) -> dict[str, Any]:
    """The outcome when Redis cannot be reached: nothing was written, the person is asked to submit again."""
    log.error("Redis unavailable while accepting", exc=True, interrupt_id=iid, user=user, team=team)
    return {"ok": False, "iid": iid, "user": user, "reason": "unavailable", "detail": {}}


def refusal_text(outcome: dict[str, Any]) -> str:
    """What the clicker reads when an answer is refused: exactly why."""
    reason, d = outcome["reason"], outcome.get("detail") or {}
    if reason == "invalid":
        lines = [f"• *{escape(k)}*: {escape(v)}" for k, v in (d.get("errors") or {}).items()]
        return ":warning: Your answer was not accepted:\n" + "\n".join(lines)
    if reason == "answered":
        when = f" at {date_token(float(d['at']))}" if d.get("at") else ""
        return f"This question was already answered by {user_ref(d.get('by', ''))}{when}."
    if reason == "not_allowed":
        who = ", ".join(user_ref(u) for u in d.get("assignees", []))
        return f"This question is not yours to answer; it is waiting on {who}."
    if reason == "cancelled":
        by = d.get("by", "")
        return "This question was cancelled" + (f" by {user_ref(by)}." if by.startswith(("U", "W")) else ".")
    if reason == "expired":
        return "This question expired before it was answered."
    if reason == "unavailable":
        return ":warning: Parley could not save your answer just now. Nothing was recorded; please submit again."
    if reason == "not_open":
        return "This question is not waiting for an answer right now; try again in a moment."
    return "This question no longer exists."


def tell_refusal(client: WebClient, outcome: dict[str, Any] | None, channel: str | None, thread_ts: str | None) -> None:
    """After the ack: tell the person whose answer was refused exactly why.

    An accepted answer needs nothing here: the resumed run shows it on the question
    (the worker locks the message), so the ack path makes no Web API call at all.
    """
    if not outcome or outcome["ok"] or not channel:
        return
    client.chat_postEphemeral(channel=channel, user=outcome["user"], thread_ts=thread_ts, text=refusal_text(outcome))


def _jsonable(detail: dict[str, Any]) -> dict[str, Any]:
    return {k: (v if isinstance(v, str | int | float | list | dict) else str(v)) for k, v in detail.items()}
