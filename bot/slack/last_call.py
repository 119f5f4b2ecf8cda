"""The last call: a reminder shortly before a question expires, saying when in each reader's time.

Slack renders a `<!date^…>` token in the time zone of whoever reads it. Where Slack cannot, the
fallback uses the asked person's time zone. That is a notification's preview, or an old client.
The zone is read from their Slack profile (`users.info`, scope `users:read`).
"""

from __future__ import annotations

import time

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.slack.mrkdwn import date_token, duration, is_group_id, user_ref
from workers.interaction import QuestionInfo
from workers.logs import Log

log = Log("parley.slack")


def profile_tz(client: WebClient, user: str) -> str | None:
    """The IANA time zone of `user`'s Slack profile, or None."""
    try:
        tz = client.users_info(user=user)["user"].get("tz")
    except (SlackApiError, KeyError, TypeError) as exc:
        log.info("no time zone for the last call", user=user, error=str(exc))
        return None
    return str(tz) if tz else None


def last_call_text(client: WebClient, interrupt: QuestionInfo, now: float | None = None) -> str:
    """ ":alarm_clock: Last call: @alice, the question above expires <when> (in 15 min)."""
    people = [u for u in interrupt.assignees if not is_group_id(u)]
    who = ", ".join(user_ref(u) for u in interrupt.assignees) or "everyone here"
    expires_at = interrupt.expires_at
    if expires_at is None:
        return f":alarm_clock: Last call: {who}, the question above is still waiting for an answer."
    zones = {profile_tz(client, u) for u in people[:5]}  # a few lookups at most: the token does the rest
    tz = zones.pop() if len(zones) == 1 else None
    lead = interrupt.request.last_call_lead() or 0  # what it was meant to be; less if the sweep ran late
    left = duration(min(lead, expires_at - (time.time() if now is None else now)))
    return f":alarm_clock: Last call: {who}, the question above expires {date_token(expires_at, tz=tz)} (in {left})."
