"""Accepting an answer from any Slack surface, and telling the clicker the outcome.

The ack half (`accept_from_slack`) does only Redis work: read the stored request,
decode, validate, accept atomically, enqueue. Its outcome is left in the bolt
context as plain JSON so the lazy half (`report_outcome`) can update the question
message or explain a refusal ephemerally after Slack has its ack.
"""

from __future__ import annotations

import time
from typing import Any

import redis
from slack_sdk import WebClient

from bot.deps import BotDeps
from bot.slack.mrkdwn import date_token, escape, user_ref
from workers.interaction import Answer
from workers.logs import Log
from workers.runtime.acceptance import AcceptRefused, accept

log = Log("parley.answers")
OUTCOME = "parley_outcome"


def accept_from_slack(
    deps: BotDeps, iid: str, user: str, team: str | None, answers: list[Answer], token: str
) -> dict[str, Any]:
    """Try to accept; returns a JSON outcome: {"ok": bool, "reason", "message", "errors", ...}."""
    try:
        accepted = accept(deps.runtime, iid, user, answers, team=team, token=token)
    except AcceptRefused as exc:
        return {"ok": False, "iid": iid, "user": user, "reason": exc.reason, "detail": _jsonable(exc.detail)}
    except redis.RedisError:
        return unavailable(iid, user, team)
    return {"ok": True, "iid": iid, "user": user, "run_id": accepted.run.id}


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


def report_outcome(deps: BotDeps, client: WebClient, outcome: dict[str, Any] | None, channel: str | None) -> None:
    """After the ack: lock the answered message, or tell the clicker why not."""
    if not outcome:
        return
    if outcome["ok"]:
        interrupt = deps.runtime.store.interrupt(outcome["iid"])
        if interrupt is not None:
            deps.slack.lock_question(interrupt)
        return
    if outcome["reason"] == "answered" and outcome.get("duplicate_delivery"):
        return
    target = channel or _question_channel(deps, outcome["iid"])
    if target:
        client.chat_postEphemeral(channel=target, user=outcome["user"], text=refusal_text(outcome))


def _question_channel(deps: BotDeps, iid: str) -> str | None:
    interrupt = deps.runtime.store.interrupt(iid)
    return interrupt.message.get("channel") if interrupt else None


def _jsonable(detail: dict[str, Any]) -> dict[str, Any]:
    return {k: (v if isinstance(v, str | int | float | list | dict) else str(v)) for k, v in detail.items()}


def now() -> float:
    return time.time()
