"""Slack's refusals that no retry fixes: the thread, message or token is gone.

A workspace changes under a waiting run. Its channel is archived, or Parley is removed from it. The
question's message is deleted. The app is uninstalled, or its token revoked. Slack then refuses
every later post or update there. A retry would fail the same way, and would repeat the agent.

So the Slack host logs such a refusal, with the run's fields, and goes on. An answer already
accepted still resumes the run once. An expiry still ends it. Only a new question fails the run,
since nobody could answer it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from slack_sdk.errors import SlackApiError

from workers.exceptions import NotInstalled
from workers.logs import Log

log = Log("parley.slack")

GONE_CONVERSATION = frozenset({"channel_not_found", "not_in_channel", "is_archived"})
"""The conversation is archived, deleted, or no longer has Parley in it."""
GONE_MESSAGE = frozenset({"message_not_found", "cant_update_message"})
"""The message to update was deleted, or may no longer be changed by Parley."""
GONE_TOKEN = frozenset({"invalid_auth", "account_inactive", "token_revoked", "token_expired", "not_authed"})
"""The bot token no longer works: the app was uninstalled, or its token revoked."""
UNREACHABLE = GONE_CONVERSATION | GONE_MESSAGE | GONE_TOKEN


def unreachable(exc: SlackApiError) -> str:
    """Slack's error when no retry could reach the place, else "" (a retry may help)."""
    error = str(exc.response.get("error") or "")
    return error if error in UNREACHABLE else ""


@contextmanager
def unless_unreachable(context: dict[str, Any], what: str) -> Iterator[None]:
    """Run the body; a refusal no retry fixes is logged as `what` not shown, and swallowed.

    `context` holds the log fields: the run's, and the question's where there is one. Any other
    error propagates, so the runtime retries it as before.
    """
    try:
        yield
    except SlackApiError as exc:
        if not (error := unreachable(exc)):
            raise
        log.warning(f"{what} not shown: Slack can no longer reach it", **context, error=error)
    except NotInstalled as exc:
        log.warning(f"{what} not shown: {exc}", **context)
