"""`/parley`: start a run, list the agents, or (admins) list paused runs.

Starting a run creates it before the ack. That is one Redis write, so the person learns at once
if it failed. The root message becoming the run's thread is posted after the ack, in a bolt lazy
listener. That listener then enqueues the run.

Before a run is created, the start limits (`deps.start_limits`) are checked and taken in one
step. They limit starts per person and per channel, and open runs per person. Over one, the
person is told which, and when to try again. Nothing is started.

A signed request stays valid for the signature window. So the same `/parley` request sent again
within it, a replay, would start another run. Each invocation carries its own `trigger_id`. One
already seen in the window is acked with a note, and starts nothing.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import redis
from slack_bolt import Ack, App, BoltContext

from bot.deps import BotDeps
from bot.slack import blocks
from bot.slack.mrkdwn import escape
from workers import metrics
from workers.exceptions import AgentUnavailable, UnknownAgent
from workers.logs import Log
from workers.runs import Admission, RunStatus, RunSummary, StartLimit, StartLimits, StartRefused

log = Log("parley.commands")
MAX_TEXT = 3000
RUN_ID = "parley_run"
"""The bolt context key the ack half leaves the new run's id under, for the lazy half."""
UNAVAILABLE = ":warning: Parley cannot reach its store just now, so nothing was started. Please try again in a moment."
ALREADY_RECEIVED = "Parley already received this command, so nothing new was started."
SIGNATURE_WINDOW = 300
"""Seconds a signed request is accepted for (bolt's verifier); a replay can only come within them."""


def help_text(deps: BotDeps, problem: str | None = None) -> str:
    lines = [f":warning: {problem}", ""] if problem else []
    lines.append("*Parley agents* (start one with `/parley AGENT text`):")
    for spec in deps.runs.registry.all():
        lines.append(f"• *{escape(spec.name)}*: {escape(spec.description)}")
    lines.append("Admins: `/parley runs` lists paused runs.")
    return "\n".join(lines)


def usage_text(name: str, usage: str, description: str) -> str:
    """The answer to `/parley NAME` without text: the text the agent needs, and what it does."""
    return f":information_source: Usage: `/parley {escape(name)} {escape(usage)}`\n{escape(description)}"


def _in(seconds: float) -> str:
    if seconds < 60:
        return f"{max(1, math.ceil(seconds))} s"
    return f"{math.ceil(seconds / 60)} min"


def start_refusal(admission: Admission, limits: StartLimits) -> str:
    """What the person reads when a start limit refuses `/parley`: which, and when to retry."""
    if admission.refused is StartLimit.OPEN_RUNS:
        return (
            f":hourglass: You have {limits.open_runs} runs open, the most one person may have"
            " (`PARLEY_OPEN_RUNS_PER_USER`), so nothing was started."
            " Try again once one of them has finished or been cancelled."
        )
    if admission.refused is StartLimit.CHANNEL:
        what = f"Runs are being started in this channel faster than {limits.per_channel} (`PARLEY_STARTS_PER_CHANNEL`)"
    else:
        what = f"You are starting runs faster than {limits.per_user} (`PARLEY_STARTS_PER_USER`)"
    return f":hourglass: {what}, so nothing was started. Try again in {_in(admission.retry_after)}."


def on_parley(ack: Ack, body: dict[str, Any], context: BoltContext, deps: BotDeps) -> None:
    """Before the ack: answer help and listings ephemerally, or create the run."""
    text = (body.get("text") or "").strip()
    user, channel, team = body["user_id"], body["channel_id"], body.get("team_id", "")
    name, _, rest = text.partition(" ")
    if name in ("", "help"):
        ack(response_type="ephemeral", text=help_text(deps))
        return
    if name == "runs":
        if not deps.is_admin(user, context):
            ack(response_type="ephemeral", text="Only Parley admins can list runs.")
            return
        where = deps.admin_filter(user, context)
        page = deps.runs.list_runs(RunStatus.PAUSED, per_page=20, where=where)
        runs = [RunSummary.of(r) for r in page.runs]
        ack(
            response_type="ephemeral",
            text="Paused runs",
            blocks=blocks.runs_list_blocks(runs, deps.runs.counts(where)),
        )
        return
    try:
        spec = deps.runs.registry.startable(name)
    except AgentUnavailable as exc:
        ack(response_type="ephemeral", text=f":warning: {escape(exc.reason)}.")
        return
    except UnknownAgent:
        ack(response_type="ephemeral", text=help_text(deps, f"There is no agent called `{escape(name)}`."))
        return
    if spec.usage and not rest.strip():  # nothing to work on: say what it needs, start nothing
        ack(response_type="ephemeral", text=usage_text(name, spec.usage, spec.description))
        return
    if len(rest) > MAX_TEXT:
        too_long = f":warning: The text is {len(rest)} characters; the limit is {MAX_TEXT}."
        ack(response_type="ephemeral", text=too_long)
        return
    trigger_id = body.get("trigger_id")
    try:
        if trigger_id and not deps.runs.first_delivery(f"command:{trigger_id}", SIGNATURE_WINDOW):
            log.warning("slash command received again; nothing started", team=team, channel=channel, user=user)
            ack(response_type="ephemeral", text=ALREADY_RECEIVED)
            return
        conversation = {"host": "slack", "team": team, "channel": channel}
        if body.get("enterprise_id"):  # an org-wide install: answers may come with no team
            conversation["enterprise"] = body["enterprise_id"]
        if context.is_enterprise_install:  # its bot token is the organisation's installation's
            conversation["enterprise_install"] = True
        run = deps.runs.create(name, rest.strip(), user, conversation, limits=deps.start_limits)
    except redis.RedisError:
        log.error("Redis unavailable; run not created", exc=True, team=team, channel=channel, user=user)
        ack(response_type="ephemeral", text=UNAVAILABLE)
        return
    if isinstance(run, StartRefused):
        admission = run.admission
        limit, wait = str(admission.refused), round(admission.retry_after, 1)
        metrics.start_refused(limit)
        log.warning("run start refused", limit=limit, retry_after=wait, team=team, channel=channel, user=user)
        ack(response_type="ephemeral", text=start_refusal(admission, deps.start_limits))
        return
    context[RUN_ID] = run.id
    metrics.run_started(name)
    log.info("run created", run_id=run.id, team=team, channel=channel, user=user, agent=name)
    ack()


def start_run(context: BoltContext, deps: BotDeps) -> None:
    """After the ack: post the root message (the run's thread), then enqueue the run."""
    run_id = context.get(RUN_ID)
    if not run_id:
        return
    run = deps.runs.run(run_id)
    try:
        deps.slack.start_thread(run)
    except Exception:
        log.error("could not post the root message; the worker will", exc=True, **run.log_context())
    deps.runs.begin(run_id)


def register(app: App, deps: BotDeps) -> None:
    app.command("/parley")(ack=partial(on_parley, deps=deps), lazy=[partial(start_run, deps=deps)])
