"""Everything Parley posts to Slack, as Block Kit dicts and message text: the bot's one import.

Question rendering lives in `bot.slack.blocks_question`. Its docstring holds the block and
action id scheme the bot routes on. The Home tab lives in `bot.slack.blocks_home`. Both are
re-exported here. This module adds the run-lifecycle messages posted in a run's thread.

All builders are pure: no I/O, no clock. Agent-supplied text is escaped before it reaches
mrkdwn: agent names, run text, reasons, results. So it can never ping a channel or forge a link.

Action ids of the run-lifecycle messages:

    parley_admin_retry   "Retry" button on a failed run's message; value = run_id
"""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement, MarkdownTextObject, SectionBlock

from bot.slack import limits
from bot.slack.blocks_home import (
    ADMIN_CANCEL_ACTION_ID,
    ADMIN_PAGE_ACTION_ID,
    ADMIN_REMIND_ACTION_ID,
    ADMIN_RETRY_ACTION_ID,
    HOME_PAGE_SIZE,
    home_view,
    runs_list_blocks,
)
from bot.slack.blocks_inputs import ANSWER_ACTION_ID
from bot.slack.blocks_locked import answered_blocks, closed_blocks, locked_text
from bot.slack.blocks_question import (
    CHOOSE_ACTION_PREFIX,
    CLAIM_ACTION_ID,
    DECLINE_ACTION_ID,
    EXTERNAL_SELECT_THRESHOLD,
    FORM_CALLBACK_ID,
    OPEN_FORM_ACTION_ID,
    REASSIGN_ACTION_ID,
    RELEASE_ACTION_ID,
    SUBMIT_ACTION_ID,
    asked_by_line,
    fallback_text,
    is_fast_path,
    modal_view,
    origin_block,
    question_blocks,
)
from bot.slack.limits import utf16_len
from bot.slack.mrkdwn import clip, cut_escaped, escape, user_ref

TEXT_MAX = 4000
"""Slack's recommended ceiling for a message's top-level `text`."""

__all__ = [
    "ADMIN_CANCEL_ACTION_ID",
    "ADMIN_PAGE_ACTION_ID",
    "ADMIN_REMIND_ACTION_ID",
    "ADMIN_RETRY_ACTION_ID",
    "ANSWER_ACTION_ID",
    "CHOOSE_ACTION_PREFIX",
    "CLAIM_ACTION_ID",
    "DECLINE_ACTION_ID",
    "EXTERNAL_SELECT_THRESHOLD",
    "FORM_CALLBACK_ID",
    "HOME_PAGE_SIZE",
    "OPEN_FORM_ACTION_ID",
    "REASSIGN_ACTION_ID",
    "RELEASE_ACTION_ID",
    "SUBMIT_ACTION_ID",
    "answered_blocks",
    "asked_by_line",
    "closed_blocks",
    "escape",
    "failed_blocks",
    "failed_text",
    "fallback_text",
    "final_text",
    "home_view",
    "is_fast_path",
    "locked_text",
    "modal_view",
    "origin_block",
    "progress_text",
    "question_blocks",
    "run_started_text",
    "runs_list_blocks",
]


def run_started_text(user: str, agent: str, text: str) -> str:
    """A run's thread root, "<@U…> started *agent*: text", name and text escaped."""
    head = f"{user_ref(user)} started *{clip(agent, 100)}*"
    if not text.strip():
        return head
    return f"{head}: {clip(text, TEXT_MAX - utf16_len(head) - 2)}"


def progress_text(text: str) -> str:
    """A progress note an agent posts in its run's thread."""
    return f":hourglass_flowing_sand: {clip(text, TEXT_MAX - 30)}"


def final_text(result: Any) -> str:
    """The run's result, escaped: text as is, else pretty JSON in a code block."""
    if result is None:
        return ":white_check_mark: Done."
    if isinstance(result, str):
        return (
            f":white_check_mark: Done: {clip(result, TEXT_MAX - 40)}" if result.strip() else ":white_check_mark: Done."
        )
    try:
        rendered = json.dumps(result, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        rendered = repr(result)
    return f":white_check_mark: Done:\n```\n{clip(rendered, TEXT_MAX - 60)}\n```"


def failed_text(reason: str) -> str:
    """The run failed: the reason, escaped."""
    return f":x: Failed: {clip(reason, TEXT_MAX - 40)}" if reason.strip() else ":x: Failed."


def failed_blocks(reason: str, run_id: str, show_retry: bool) -> list[dict[str, Any]]:
    """The failure message.

    With `show_retry`, for admins' eyes, it has a "Retry" button valued `run_id`.
    """
    text = failed_text(reason)
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=cut_escaped(text, 3000)))]
    if show_retry:
        blocks.append(
            ActionsBlock(elements=[ButtonElement(text="Retry", action_id=ADMIN_RETRY_ACTION_ID, value=run_id)])
        )
    out = [b.to_dict() for b in blocks]
    limits.check_message_blocks(out)
    return out
