"""A failed run's message as Slack's `alert` block, for workspaces that have it.

Slack's alert block is a notice coloured by its `level`
(https://docs.slack.dev/reference/block-kit/blocks/alert). Parley shows a run's failure as an
`error` alert above the Retry button. An expiry ends a run the same way, and shows the same. A
workspace without the block refuses it (`invalid_blocks`). The message then goes out as
`blocks.failed_blocks`' plain section instead (`host_agents`).
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import ActionsBlock, AlertBlock, Block, ButtonElement, MarkdownTextObject

from bot.slack import limits
from bot.slack.blocks import ADMIN_RETRY_ACTION_ID, failed_text
from bot.slack.mrkdwn import cut_escaped

ALERT_TEXT_MAX = 3000
"""Slack documents no length for an alert's text. Parley's choice: a section's 3,000 UTF-16 units."""


def failed_alert_blocks(reason: str, run_id: str, show_retry: bool) -> list[dict[str, Any]]:
    """The failure as an `error` alert.

    With `show_retry`, it has a "Retry" button valued `run_id`.
    """
    text = cut_escaped(failed_text(reason), ALERT_TEXT_MAX)
    blocks: list[Block] = [AlertBlock(text=MarkdownTextObject(text=text), level="error")]
    if show_retry:
        blocks.append(
            ActionsBlock(elements=[ButtonElement(text="Retry", action_id=ADMIN_RETRY_ACTION_ID, value=run_id)])
        )
    out = [b.to_dict() for b in blocks]
    limits.check_message_blocks(out)
    return out
