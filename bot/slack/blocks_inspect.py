"""The "Inspect" modal: one run as admins and the people it asks see it in Slack.

It shows in a modal what `parley runs show` prints:
- the run: agent, status, who started it, its text
- the question it waits on: who was asked, since when, the reminders sent
- the answers given so far, and the steps recorded
- its history, a page at a time, so a long history stays within a modal's 100 blocks
Text from agents and people is escaped. Dates are Slack date tokens, shown in the reader's
timezone.

    parley_inspect       "Inspect" on a run (App Home, `/parley runs`); value = run_id
    parley_inspect_page  "Older"/"Newer" history in the modal; value = "{run_id}|{page}"
"""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.slack import limits
from bot.slack.limits import SECTION_MAX
from bot.slack.mrkdwn import clip, cut_escaped, date_token, truncate, user_ref
from workers.runs import HistoryEntry, InterruptState, RunDetail, RunStatus

INSPECT_ACTION_ID = "parley_inspect"
INSPECT_PAGE_ACTION_ID = "parley_inspect_page"
HISTORY_PAGE = 50
"""History entries per page, newest first, ten to a section."""
ANSWERS_SHOWN = 10
LINE_MAX = 250
MIN_TEXT_CAP = 150
"""The least text a section or context keeps when Inspect is cut to a modal's budget."""


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=cut_escaped(text, SECTION_MAX) if text else " "))


def _context(text: str) -> ContextBlock:
    return ContextBlock(elements=[MarkdownTextObject(text=cut_escaped(text, SECTION_MAX))])


def _value(value: Any, room: int) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return clip(" ".join(shown.split()), room)


def _answer_lines(answers: list[dict[str, Any]]) -> list[str]:
    lines = []
    for answer in answers:
        given = {k: v for k, v in answer.items() if k != "id"}
        lines.append(f"• {clip(str(answer.get('id', '?')), 60)}: {_value(next(iter(given.values()), None), 200)}")
    return lines or ["• _no answer_"]


def _run_blocks(detail: RunDetail) -> list[Block]:
    run = detail.run
    facts = [
        f"*Started by* {user_ref(run.started_by)}, {date_token(run.created_at)}",
        f"*Run* `{_code(run.id)}` · updated {date_token(run.updated_at)}",
    ]
    if run.text:
        facts.append(f"*Text* {clip(run.text, 500)}")
    if run.error:
        facts.append(f"*Error* {clip(run.error, 500)}")
    if run.result:
        facts.append(f"*Result* {clip(run.result, 500)}")
    target = run.conversation.get("temporal")
    if isinstance(target, dict) and target.get("workflow_id"):  # a Temporal workflow waits on this question
        workflow = f"`{_code(str(target['workflow_id']))}` · namespace `{_code(str(target.get('namespace', '')))}`"
        facts.append(f"*Temporal workflow* {workflow}")
    header = truncate(f"{run.agent} · {run.status.value}", 150)
    return [HeaderBlock(text=PlainTextObject(text=header)), _section("\n".join(facts))]


def _group_blocks(detail: RunDetail) -> list[Block]:
    """A run paused on several questions: each one's progress.

    `ask_each` shows one per person.
    """
    lines = []
    for q in detail.questions[:20]:
        if q.state is InterruptState.ANSWERED:
            how = f"answered by {user_ref(q.answered_by)}"
        elif q.state is InterruptState.OPEN:
            how = "waiting on " + (", ".join(user_ref(a) for a in q.assignees[:5]) or "nobody")
        else:
            how = q.state.value.replace("_", " ")
        lines.append(f"• `{_code(q.key)}` {clip(q.request.reason, 100)}: {how}")
    done = sum(1 for q in detail.questions if q.state is InterruptState.ANSWERED)
    head = f"*Waiting on {len(detail.questions)} questions at once* ({done} answered)"
    return [DividerBlock(), _section("\n".join([head, *lines]))]


def _question_blocks(detail: RunDetail) -> list[Block]:
    question = detail.interrupt
    if detail.questions and detail.run.status is RunStatus.PAUSED:
        return _group_blocks(detail)
    if question is None or detail.run.status is not RunStatus.PAUSED:
        return []
    asked = ", ".join(user_ref(a) for a in question.assignees[:10]) or "nobody"
    since = f"Asked of {asked} · since {date_token(question.asked_at)}"
    if question.expires_at:
        since += f" · expires {date_token(question.expires_at)}"
    reminders = [h for h in detail.history if h.event == "reminded" and h.detail.get("interrupt_id") == question.id]
    sent = [f"{date_token(h.at)} by {user_ref(h.by) if h.by != 'parley' else 'Parley'}" for h in reminders]
    return [
        DividerBlock(),
        _section(f"*Waiting for an answer*\n{clip(question.request.reason, 1000)}"),
        _context(since),
        _context("Reminders sent: " + "; ".join(sent) if sent else "No reminder sent yet."),
    ]


def _answers_blocks(history: list[HistoryEntry]) -> list[Block]:
    answered = [h for h in history if h.event == "answered"]
    if not answered:
        return [DividerBlock(), _section("*Answers so far*\nNone yet.")]
    found: list[Block] = [DividerBlock(), _section("*Answers so far*")]
    for h in answered[-ANSWERS_SHOWN:]:
        key, attempt = clip(str(h.detail.get("key", "?")), 80), h.detail.get("attempt", 1)
        head = f"*{key}* (attempt {attempt}), by {user_ref(h.by)}, {date_token(h.at)}"
        found.append(_section("\n".join([head, *_answer_lines(list(h.detail.get("answers") or []))])))
    if len(answered) > ANSWERS_SHOWN:
        found.append(_context(f"…and {len(answered) - ANSWERS_SHOWN} earlier answers in the history."))
    return found


def receipt_blocks(receipts: dict[str, str]) -> list[Block]:
    """The digests of the run's signed receipts, newest last (docs/receipts.md).

    None without any.
    """
    if not receipts:
        return []
    shown = list(receipts.items())[-ANSWERS_SHOWN:]
    lines = [f"`{_code(iid)}`: `sha256:{digest[:16]}…`" for iid, digest in shown]
    return [_context("Signed receipts: " + ", ".join(lines))]


def _code(text: str) -> str:
    """Text for inside a code span: escaped, without the backticks that would end it."""
    return clip(text, 80).replace("`", "'")


def _steps_block(steps: dict[str, object]) -> Block:
    if not steps:
        return _section("*Steps recorded*\nNone yet.")
    lines = [f"• `{_code(key)}`: {_value(value, 150)}" for key, value in steps.items()]
    return _section("\n".join(["*Steps recorded*", *lines]))


def _history_line(h: HistoryEntry) -> str:
    shown = {k: v for k, v in h.detail.items() if k not in ("answers", "trace", "interrupt_id")}
    detail = ", ".join(f"{k}: {_value(v, 80)}" for k, v in shown.items())
    by = f" · {user_ref(h.by)}" if h.by else ""
    line = f"{date_token(h.at)} · *{clip(h.event, 40)}*{by}" + (f" · {detail}" if detail else "")
    return cut_escaped(line, LINE_MAX)


def _history_blocks(run_id: str, history: list[HistoryEntry], page: int) -> list[Block]:
    newest = list(reversed(history))
    pages = max(1, -(-len(newest) // HISTORY_PAGE))
    page = min(max(page, 0), pages - 1)
    shown = newest[page * HISTORY_PAGE : (page + 1) * HISTORY_PAGE]
    first, last = page * HISTORY_PAGE + 1, page * HISTORY_PAGE + len(shown)
    found: list[Block] = [DividerBlock(), _section(f"*History*, newest first ({first} to {last} of {len(newest)})")]
    for n in range(0, len(shown), 10):
        found.append(_section("\n".join(_history_line(h) for h in shown[n : n + 10])))
    buttons = []
    if page > 0:
        buttons.append(ButtonElement(text="◀ Newer", action_id=INSPECT_PAGE_ACTION_ID, value=f"{run_id}|{page - 1}"))
    if page < pages - 1:
        buttons.append(ButtonElement(text="Older ▶", action_id=INSPECT_PAGE_ACTION_ID, value=f"{run_id}|{page + 1}"))
    if buttons:
        found.append(ActionsBlock(block_id="inspect|page", elements=buttons))
    return found


def inspect_view(detail: RunDetail, *, page: int = 0) -> dict[str, Any]:
    """The Inspect modal for `detail`, at history page `page` (0: newest)."""
    blocks = [
        *_run_blocks(detail),
        *_question_blocks(detail),
        *_answers_blocks(detail.history),
        *receipt_blocks(detail.receipts),
        _steps_block(detail.steps),
        *_history_blocks(detail.run.id, detail.history, page),
    ]
    view = View(
        type="modal",
        title=PlainTextObject(text="Inspect run"),
        close=PlainTextObject(text="Close"),
        private_metadata=detail.run.id,
        blocks=blocks,
    ).to_dict()
    if not limits.within_view_budget(view):
        low, high = MIN_TEXT_CAP, SECTION_MAX
        while low < high:
            mid = (low + high + 1) // 2
            if limits.within_view_budget(_capped(view, mid)):
                low = mid
            else:
                high = mid - 1
        view = _capped(view, low)
    limits.check_view(view)
    return view


def _capped(view: dict[str, Any], cap: int) -> dict[str, Any]:
    """`view` with each section's and context's mrkdwn cut to `cap`.

    The head of each part stays, and the rest goes. That keeps Inspect within a modal's budget
    (`limits.MAX_VIEW_TEXT`, `limits.MAX_VIEW_JSON`). It is needed when a run's answers, steps and
    history page hold more text than a modal carries.
    """

    def cut(text: dict[str, Any]) -> dict[str, Any]:
        return {**text, "text": cut_escaped(text["text"], cap)} if text.get("type") == "mrkdwn" else text

    blocks = []
    for block in view["blocks"]:
        if block["type"] == "section" and isinstance(block.get("text"), dict):
            block = {**block, "text": cut(block["text"])}
        elif block["type"] == "context":
            block = {**block, "elements": [cut(e) for e in block.get("elements") or []]}
        blocks.append(block)
    return {**view, "blocks": blocks}


def notice_view(text: str) -> dict[str, Any]:
    """A modal that only says `text` (already mrkdwn), like why a run is not inspectable."""
    view = View(
        type="modal",
        title=PlainTextObject(text="Inspect run"),
        close=PlainTextObject(text="Close"),
        blocks=[_section(text)],
    ).to_dict()
    limits.check_view(view)
    return view
