"""Block Kit for a question once it is locked: answered, cancelled, declined or expired.

A locked message has no controls and no block_ids: Slack assigns fresh ones. An answer shows
its option labels, and a secret shows only who provided it, never its value.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import Block, ContextBlock, MarkdownTextObject, SectionBlock

from bot.slack import limits
from bot.slack.blocks_approval import approval_answered_blocks
from bot.slack.blocks_context import deciding_on
from bot.slack.blocks_question import FALLBACK_MAX, QUESTION_TEXT_BUDGET, to_dicts
from bot.slack.limits import SECTION_MAX, utf16_len
from bot.slack.mrkdwn import clip, cut_escaped, date_token, escape, fold_blank_lines, user_ref
from workers.interaction import Context
from workers.interaction.models import Answer, Item, Request
from workers.interaction.validation import value_text


def answer_text(item: Item, answer: Answer | None, room: int, answered_by: str = "") -> str:
    value = answer.value if answer else None
    if value is None or value == [] or value == "":
        return "_no answer_"
    if item.is_secret:  # the value is never shown, not even masked: who gave it is all there is to say
        return f"_provided by {user_ref(answered_by)}_" if answered_by else "_provided_"
    if isinstance(value, list):
        labels = [option.label if (option := item.option(v)) else v for v in value]
        return clip(", ".join(labels), room)
    if item.is_choice and isinstance(value, str):
        opt = item.option(value)
        return clip(opt.label if opt else value, room)
    return clip(value_text(value), room)


def locked_reason(request: Request) -> list[Block]:
    return [SectionBlock(text=MarkdownTextObject(text=clip(fold_blank_lines(request.reason), SECTION_MAX)))]


def answered_blocks(
    request: Request, answers: list[Answer], *, answered_by: str, answered_at: float, context: Context | None = None
) -> list[dict[str, Any]]:
    """The locked message after an answer: reason, facts given on, answers, who and when."""
    if request.approval is not None:
        out = to_dicts(approval_answered_blocks(request, answers, answered_by=answered_by, answered_at=answered_at))
        limits.check_message_blocks(out)
        return out
    by_id = {a.id: a for a in answers}
    reason = to_dicts([*locked_reason(request), *([deciding_on(context)] if context is not None else [])])
    share = min(SECTION_MAX, (QUESTION_TEXT_BUDGET - limits.text_length(reason) - 200) // len(request.items))
    sections: list[Block] = []
    for item in request.items:
        title = clip(item.text, max(60, min(1000, share // 2)))
        body = answer_text(item, by_id.get(item.id), max(20, share - utf16_len(title) - 3), answered_by)
        sections.append(SectionBlock(text=MarkdownTextObject(text=f"*{title}*\n{body}")))
    who = ContextBlock(
        elements=[MarkdownTextObject(text=f"Answered by {user_ref(answered_by)}, {date_token(answered_at)}")]
    )
    out = [*reason, *to_dicts([*sections, who])]
    limits.check_message_blocks(out)
    return out


def closed_blocks(request: Request, *, status: str, detail: str = "", by: str | None = None) -> list[dict[str, Any]]:
    """The locked message for a question closed unanswered.

    `status` "cancelled" reads "Cancelled", and "declined" reads "Declined". Either names `by`, a
    user id, when given. "expired" reads "Expired without an answer". `detail` is escaped free text
    shown under it.
    """
    if status in ("cancelled", "declined"):
        headline = f":no_entry_sign: {status.capitalize()}" + (f" by {user_ref(by)}" if by else "")
    elif status == "expired":
        headline = ":hourglass: Expired without an answer"
    else:
        headline = clip(status.capitalize(), 200)
    text = headline + (f"\n{clip(detail, 1000)}" if detail else "")
    out = to_dicts([*locked_reason(request), SectionBlock(text=MarkdownTextObject(text=text))])
    limits.check_message_blocks(out)
    return out


def locked_text(request: Request, outcome: str) -> str:
    """A locked question's top-level `text`: its outcome and reason, escaped and cut.

    Outcomes read "Answered by <@U…>", "Cancelled" or "Expired". The text is cut to Slack's 4,000
    characters. Escaping alone can make a 3,000-character reason several times longer.
    """
    return cut_escaped(f"{outcome}: {escape(request.reason)}", FALLBACK_MAX)
