"""Block Kit for the facts an answer is bound to: what people decide on, and what changed.

A question asked with a context shows it as a compact "You are deciding on" section. An earlier
answer may be void because those facts changed. Then the question asked again shows each changed
field (old → new) above it. The old question's message is replaced by `superseded_blocks`. Facts
come from agents, so every field name and value is escaped. Each line and section is cut to fit
Block Kit's limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk.models.blocks import Block, MarkdownTextObject, SectionBlock

from bot.slack import limits
from bot.slack.limits import SECTION_MAX
from bot.slack.mrkdwn import clip, cut_escaped, user_ref
from workers.interaction import Context, ContextChange, Request
from workers.interaction.context import describe_change, show_value

LINE_MAX = 400
"""The most characters one fact or one change takes, escaped."""
DECIDING_ON = "You are deciding on"
FACTS_CHANGED = ":warning: *The facts changed since the last answer*, so it no longer applies:"
SUPERSEDED = "Superseded: the facts changed"


def _line(text: str) -> str:
    return "• " + clip(" ".join(text.split()), LINE_MAX)


def _section(head: str, lines: list[str], block_id: str | None) -> SectionBlock:
    return SectionBlock(
        block_id=block_id, text=MarkdownTextObject(text=cut_escaped("\n".join([head, *lines]), SECTION_MAX))
    )


def deciding_on(context: Context, block_id: str | None = None) -> SectionBlock:
    """The "You are deciding on" section: one line per fact, `field: value`."""
    lines = [_line(f"{name}: {show_value(value)}") for name, value in context.items()] or ["• (no facts)"]
    return _section(f"*{DECIDING_ON}*", lines, block_id)


def what_changed(changes: Sequence[ContextChange], block_id: str | None = None) -> SectionBlock:
    """The changes that voided the last answer, one line per field: `version: v1.4.2 → v1.4.3`."""
    return _section(FACTS_CHANGED, [_line(describe_change(c)) for c in changes], block_id)


def context_blocks(context: Context | None, changes: Sequence[ContextChange], iid: str, version: int) -> list[Block]:
    """The blocks between who is asked and the inputs: what changed, then the facts."""
    found: list[Block] = []
    if changes:
        found.append(what_changed(changes, f"qd|{iid}|{version}"))
    if context is not None:
        found.append(deciding_on(context, f"qx|{iid}|{version}"))
    return found


def superseded_blocks(request: Request, changes: Sequence[ContextChange], *, answered_by: str) -> list[dict[str, Any]]:
    """The old question once its answer is void: reason, "Superseded: the facts changed", changes."""
    notice = (
        f":no_entry_sign: *{SUPERSEDED}.* The answer by {user_ref(answered_by)} no longer applies; "
        "the question is asked again below."
        if answered_by
        else f":no_entry_sign: *{SUPERSEDED}.* The answer no longer applies; the question is asked again below."
    )
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=clip(request.reason, SECTION_MAX))),
        SectionBlock(text=MarkdownTextObject(text=notice)),
    ]
    if changes:
        blocks.append(_section("*What changed*", [_line(describe_change(c)) for c in changes], None))
    out = [b.to_dict() for b in blocks]
    limits.check_message_blocks(out)
    return out


def superseded_text(request: Request) -> str:
    """The superseded message's top-level text."""
    return f"{SUPERSEDED}: {clip(request.reason, 3000)}"
