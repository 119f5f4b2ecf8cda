"""Block Kit for an `ask_each` question: its progress line and its locked look.

The question message is the ordinary one (`blocks_question.question_blocks`). The group's id
goes where a question's id goes. A progress context block, `qp|{gid}|{v}`, is added: "2 of 3
answered: @A, @B". With `show_answers`, it also shows what each person answered. Once the run
goes on, the controls give way to the same progress, locked: expired, when a question expired
before the quorum.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import Block, ContextBlock, MarkdownTextObject, SectionBlock

from bot.slack import limits
from bot.slack.blocks_locked import answer_text, locked_reason
from bot.slack.limits import SECTION_MAX
from bot.slack.mrkdwn import clip, cut_escaped, user_ref
from workers.interaction import QuestionProgress, Request

MAX_PEOPLE_SHOWN = 20


def progress_line(progress: QuestionProgress) -> str:
    """ "2 of 3 answered: @A, @B" as escaped mrkdwn, user ids made mentions."""
    who = ", ".join(user_ref(u) for u in progress.answered[:MAX_PEOPLE_SHOWN])
    more = f" and {len(progress.answered) - MAX_PEOPLE_SHOWN} more" if len(progress.answered) > MAX_PEOPLE_SHOWN else ""
    return f"{progress.summary}" + (f": {who}{more}" if who else "")


def _answers_section(request: Request, progress: QuestionProgress) -> list[Block]:
    if not progress.answers:
        return []
    lines = []
    for person, member in progress.answers[:MAX_PEOPLE_SHOWN]:
        by_id = {a.id: a for a in member.answers}
        parts = [f"{clip(i.text, 60)}: {answer_text(i, by_id.get(i.id), 200)}" for i in request.items]
        lines.append(f"• {user_ref(person)}: " + "; ".join(parts))
    return [SectionBlock(text=MarkdownTextObject(text=cut_escaped("\n".join(lines), SECTION_MAX)))]


def progress_blocks(request: Request, progress: QuestionProgress, gid: str, version: int) -> list[dict[str, Any]]:
    """The progress shown under an open `ask_each` question's controls."""
    line = ContextBlock(block_id=f"qp|{gid}|{version}", elements=[MarkdownTextObject(text=progress_line(progress))])
    return [b.to_dict() for b in [*_answers_section(request, progress), line]]


def each_closed_blocks(
    request: Request, progress: QuestionProgress, *, cancelled: bool, expired: bool = False
) -> list[dict[str, Any]]:
    """The locked `ask_each` message: who answered, and who no longer needs to.

    `expired`: a question expired unanswered before the quorum, ending the wait. The message reads
    expired, and those yet to answer as not having answered. What they answered shows if shown.
    """
    waiting = [u for u in progress.asked if u not in progress.answered]
    if cancelled:
        headline = ":no_entry_sign: Cancelled"
    elif expired:
        headline = ":hourglass: Expired: " + progress_line(progress)
    elif progress.answered:
        headline = ":white_check_mark: " + progress_line(progress)
    else:
        headline = ":hourglass: Closed without an answer"
    if waiting and not cancelled:
        rest = "Not answered by " if expired else "No longer needed from "
        headline += "\n" + rest + ", ".join(user_ref(u) for u in waiting[:MAX_PEOPLE_SHOWN])
    blocks = [
        *locked_reason(request),
        *_answers_section(request, progress),
        SectionBlock(text=MarkdownTextObject(text=cut_escaped(headline, SECTION_MAX))),
    ]
    out = [b.to_dict() for b in blocks]
    limits.check_message_blocks(out)
    return out
