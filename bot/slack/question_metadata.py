"""Question messages carry their interrupt id as Slack message metadata, to find posted questions.

Parley records a question (its interrupt) before posting it, and the message's `ts` right after.
A process may die inside `chat.postMessage`, or a reply be lost on the way back. Then Slack
posted a question whose `ts` Parley never learned. So every question message is posted with
`metadata = {"event_type": "parley_question", "event_payload": {"interrupt_id": …}}`. A replay
finding no `ts` reads the run's thread with `conversations.replies` (`include_all_metadata`). It
reuses the message it finds instead of posting another. The blocks Slack returns with it are
what was shown. Their digest is the question's `blocks_digest`, a receipt's `shown_digest`.
"""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient
from slack_sdk.models.metadata import Metadata

QUESTION_EVENT = "parley_question"
PAGE = 200
"""Messages asked for per `conversations.replies` page."""


def question_metadata(interrupt_id: str) -> Metadata:
    """The metadata a question message is posted with."""
    return Metadata(event_type=QUESTION_EVENT, event_payload={"interrupt_id": interrupt_id})


def is_question_message(message: dict[str, Any], interrupt_id: str) -> bool:
    """Whether `message` (as `conversations.replies` returns it with metadata) is the question `interrupt_id`."""
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("event_type") != QUESTION_EVENT:
        return False
    payload = metadata.get("event_payload")
    return isinstance(payload, dict) and payload.get("interrupt_id") == interrupt_id


def find_question(client: WebClient, channel: str, thread_ts: str, interrupt_id: str) -> dict[str, Any] | None:
    """Question `interrupt_id`'s message in thread `thread_ts`, as Slack returns it, or None.

    None means it was never posted.
    """
    cursor: str | None = None
    while True:
        page = client.conversations_replies(
            channel=channel, ts=thread_ts, include_all_metadata=True, limit=PAGE, cursor=cursor
        )
        for message in page.get("messages") or []:
            if is_question_message(message, interrupt_id):
                return dict(message)
        cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
        if not cursor:
            return None
