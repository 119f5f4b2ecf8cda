"""A run's final answer streamed into its thread, with feedback buttons under it.

Slack streams a message with `chat.startStream`, `chat.appendStream` and `chat.stopStream`.
slack_sdk's `WebClient.chat_stream` buffers the text, 256 characters by default, and calls them
(https://docs.slack.dev/reference/methods/chat.startStream). In a channel the stream names its
recipient (`recipient_user_id`, `recipient_team_id`): the run's starter. The stopped stream
carries a `context_actions` block with `feedback_buttons`
(https://docs.slack.dev/reference/block-kit/blocks/context-actions-block).

Only agents that answer in prose stream (`@agent(..., streams=True)`). A workspace that refuses
the stream is remembered (`AgentSurfaces`). The answer is then posted as before.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import RedisError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.models.blocks import Block
from slack_sdk.web.chat_stream import ChatStream

from bot.slack.agent_surfaces import AgentSurfaces
from workers.interaction import RunInfo
from workers.logs import Log

log = Log("parley.slack.stream")
FEEDBACK_ACTION_ID = "parley_feedback"
GOOD, BAD = "good", "bad"
CHUNK = 400
"""Characters appended at a time: the answer appears in steps, each call well inside Tier 2's pace."""
STREAM_TEXT_MAX = 12_000
"""Slack's limit on one `markdown_text`: longer answers are not streamed."""


def feedback_blocks(run_id: str) -> list[dict[str, Any]]:
    """Thumbs up and down under the answer, each valued with the run and rating."""
    block = {
        "type": "context_actions",
        "block_id": f"parley-feedback-{run_id}",
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION_ID,
                "positive_button": {
                    "text": {"type": "plain_text", "text": "👍"},
                    "value": f"{GOOD}:{run_id}",
                    "accessibility_label": "This answer helped",
                },
                "negative_button": {
                    "text": {"type": "plain_text", "text": "👎"},
                    "value": f"{BAD}:{run_id}",
                    "accessibility_label": "This answer did not help",
                },
            }
        ],
    }
    parsed = Block.parse(block)
    assert parsed is not None
    parsed.to_dict()  # slack_sdk's ContextActionsBlock and FeedbackButtonsElement validators
    return [block]


def stream_answer(surfaces: AgentSurfaces, web: WebClient, run: RunInfo, where: dict[str, str], text: str) -> bool:
    """Stream `text` into the run's thread, feedback buttons last.

    False when it was not streamed.
    """
    if not text.strip() or len(text) > STREAM_TEXT_MAX or not surfaces.available(run, "chat.startStream"):
        return False
    feedback = surfaces.available(run, "feedback")  # read before anything shows (see `_remember`)
    direct = where["channel"].startswith("D")
    stream = web.chat_stream(
        channel=where["channel"],
        thread_ts=where["thread_ts"],
        recipient_user_id=None if direct else run.started_by,
        recipient_team_id=None if direct else str(run.conversation.get("team") or "") or None,
        buffer_size=CHUNK,
    )
    try:
        for start in range(0, len(text), CHUNK):
            stream.append(markdown_text=text[start : start + CHUNK])
    except SlackApiError as exc:
        if stream.ts is None:
            surfaces.refused(run, "chat.startStream", str(exc.response.get("error") or "unknown"))
            return False  # nothing shown yet: the answer is posted instead
        _remember(surfaces, run, "chat.startStream", str(exc.response.get("error") or "unknown"))
        return _cut_short(surfaces, web, stream, run, where, text, feedback, str(exc.response.get("error")))
    except (SlackClientError, OSError) as exc:
        if stream.ts is None:
            log.warning("the answer could not be streamed", **run.log_context(), error=str(exc))
            return False
        return _cut_short(surfaces, web, stream, run, where, text, feedback, str(exc))
    _stop(surfaces, stream, run, feedback)
    return True


def _cut_short(
    surfaces: AgentSurfaces,
    web: WebClient,
    stream: ChatStream,
    run: RunInfo,
    where: dict[str, str],
    text: str,
    feedback: bool,
    error: str,
) -> bool:
    """Show the whole answer in a stream that failed part-way, and say whether it shows.

    The stream is stopped where it can be, then its message is updated to the whole text: an
    update is idempotent, so a part that reached Slack unseen is not shown twice. slack_sdk's
    `ChatStream.ts` names this fallback. False when the update fails too: the host then posts
    the answer, so nothing of it is lost.
    """
    log.warning("the streamed answer was cut short", **run.log_context(), stream_ts=stream.ts, error=error)
    _stop(surfaces, stream, run, feedback)
    try:
        web.chat_update(channel=where["channel"], ts=str(stream.ts), markdown_text=text)
        return True
    except (SlackApiError, SlackClientError, OSError) as exc:
        log.warning("the cut short answer was not completed; posting it", **run.log_context(), error=str(exc))
        return False


def _remember(surfaces: AgentSurfaces, run: RunInfo, method: str, error: str) -> None:
    """Remember a refusal once the answer shows, never failing if Redis is away.

    The final answer is a run's one effect that shows twice if repeated. An error raised after the
    stream started would repeat it. Losing the memo only means asking Slack once more.
    """
    try:
        surfaces.refused(run, method, error)
    except RedisError as exc:
        log.warning("a refusal was not remembered", **run.log_context(), method=method, error=str(exc))


def _stop(surfaces: AgentSurfaces, stream: ChatStream, run: RunInfo, feedback: bool) -> None:
    """End the stream with the feedback buttons, or without where Slack refuses them."""
    try:
        stream.stop(blocks=feedback_blocks(run.id) if feedback else None)
        return
    except SlackApiError as exc:
        _remember(surfaces, run, "feedback" if feedback else "chat.stopStream", str(exc.response.get("error")))
    except (SlackClientError, OSError) as exc:
        log.warning("the stream was not stopped", **run.log_context(), error=str(exc))
        return
    try:
        stream.stop()
    except (SlackApiError, SlackClientError, OSError) as exc:
        log.warning("the stream was not stopped", **run.log_context(), error=str(exc))
