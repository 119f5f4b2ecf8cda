"""The App Home tab and the `/parley runs` listing.

Everyone's Home tab lists the questions waiting on them. Each links to its thread, with
"Inspect" on its run. Admins (`admin` is not None) also see "Paused runs". That is one page of
the runs waiting for an answer, newest first. Above it is the count of every run by status. The
controls are:

    parley_admin_cancel  "Cancel" (with a confirmation) on queued/running/paused runs; value = run_id
    parley_admin_remind  "Remind" on paused runs; value = run_id
    parley_admin_retry   "Retry" on failed runs; value = run_id
    parley_inspect       "Inspect" on every run (and on each run `/parley runs` lists); value = run_id
    parley_admin_page    "Previous"/"Next" page; value = str(page ∓ 1). The two buttons share an
                         action_id, so each sits in its own actions block (home|page|prev / home|page|next).

Block ids are hw|{n} per waiting question, and hr|{run_id} and hra|{run_id} per run. They are
hashed if over Slack's 255 characters. So every run's blocks are distinct. Text from agents is
escaped.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.slack import limits
from bot.slack.blocks_away import away_blocks
from bot.slack.blocks_inspect import INSPECT_ACTION_ID
from bot.slack.mrkdwn import clip, date_token, duration, user_ref
from workers.runs import Away, QuestionSummary, RunSummary

HOME_PAGE_SIZE = 20
"""Runs shown per admin page; callers page their query by this."""
MAX_WAITING_SHOWN = 20
MAX_LISTED_RUNS = 30
MAX_QUESTIONS_SHOWN = 10
"""Questions listed under a run paused on several at once."""

ADMIN_CANCEL_ACTION_ID = "parley_admin_cancel"
ADMIN_REMIND_ACTION_ID = "parley_admin_remind"
ADMIN_RETRY_ACTION_ID = "parley_admin_retry"
ADMIN_PAGE_ACTION_ID = "parley_admin_page"

CANCELLABLE_STATUSES = frozenset({"queued", "running", "paused"})
REMINDABLE_STATUSES = frozenset({"paused"})
RETRYABLE_STATUSES = frozenset({"failed"})

_PERMALINK = re.compile(r"^https://[^\s<>|]+$")


def _block_id(*parts: str) -> str:
    block_id = "|".join(parts)
    if len(block_id) <= 255:
        return block_id
    return f"{parts[0]}|#{hashlib.sha256(block_id.encode()).hexdigest()}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _waiting_section(n: int, entry: dict[str, Any]) -> SectionBlock:
    reason = clip(_one_line(entry.get("reason") or "a question"), 300)
    link = entry.get("permalink")
    question = f"<{link}|{reason}>" if isinstance(link, str) and _PERMALINK.fullmatch(link) else reason
    waited = duration(float(entry.get("now", 0)) - float(entry.get("asked_at", 0)))
    agent = clip(_one_line(entry.get("agent") or "agent"), 80)
    text = f"*{agent}* · waiting {waited}\n{question}"
    inspect = ButtonElement(text="Inspect", action_id=INSPECT_ACTION_ID, value=str(entry.get("run_id", "")))
    return SectionBlock(block_id=f"hw|{n}", text=MarkdownTextObject(text=text), accessory=inspect)


STATUS_ORDER = ("queued", "running", "paused", "succeeded", "failed", "cancelled", "expired")
PAUSED_EXPLAINED = "Runs waiting for an answer, newest first."


def _counts_line(counts: dict[str, int]) -> str:
    """Every run by status, empty ones left out: "All runs: *paused* 2 · *succeeded* 4"."""
    known = [s for s in STATUS_ORDER if s in counts] + sorted(s for s in counts if s not in STATUS_ORDER)
    shown = [f"*{clip(str(status), 30)}* {int(counts[status])}" for status in known if int(counts[status])]
    return "All runs: " + " · ".join(shown) if shown else "No runs yet."


def _no_paused_runs(page: int) -> str:
    return "No paused runs right now." if page == 0 else "No paused runs on this page."


def _run_text(run: RunSummary, *, text_max: int) -> str:
    status = clip(run.status, 30).replace("`", "'")
    line = f"*{clip(_one_line(run.agent or 'agent'), 80)}* `{status}`"
    if run.text:
        line += f" — {clip(_one_line(run.text), text_max)}"
    facts = []
    if run.started_by:
        facts.append(f"started by {user_ref(run.started_by)}")
    facts.append(f"updated {date_token(float(run.updated_at))}")
    assignees = list(run.assignees)
    if assignees:
        more = f" and {len(assignees) - 5} more" if len(assignees) > 5 else ""
        facts.append("waiting on " + ", ".join(user_ref(a) for a in assignees[:5]) + more)
    progress = [_question_line(q) for q in run.questions[:MAX_QUESTIONS_SHOWN]]
    if len(run.questions) > MAX_QUESTIONS_SHOWN:
        progress.append(f"…and {len(run.questions) - MAX_QUESTIONS_SHOWN} more questions")
    return line + ("\n" + " · ".join(facts) if facts else "") + "".join(f"\n{p}" for p in progress)


def _question_line(q: QuestionSummary) -> str:
    """One of several questions a run waits on, like "• `deploy`: answered by @A".

    Or "• `db`: waiting on @B".
    """
    key = clip(_one_line(q.key), 60).replace("`", "'")
    if q.state == "answered":
        how = f"answered by {user_ref(q.answered_by)}"
    elif q.state == "open":
        how = "waiting on " + ", ".join(user_ref(a) for a in q.assignees[:3])
    else:
        how = {"not_needed": "no longer needed"}.get(q.state, clip(q.state, 30))
    return f"• `{key}`: {how}"


def _run_buttons(run: RunSummary) -> list[ButtonElement]:
    run_id, status = run.run_id, run.status
    buttons = []
    if status in CANCELLABLE_STATUSES:
        agent = clip(_one_line(run.agent or "agent"), 100)
        confirm = ConfirmObject(
            title="Cancel this run?",
            text=MarkdownTextObject(text=f"The *{agent}* run stops and any open question is closed."),
            confirm="Cancel run",
            deny="Keep it",
            style="danger",
        )
        buttons.append(
            ButtonElement(
                text="Cancel", action_id=ADMIN_CANCEL_ACTION_ID, value=run_id, style="danger", confirm=confirm
            )
        )
    if status in REMINDABLE_STATUSES:
        buttons.append(ButtonElement(text="Remind", action_id=ADMIN_REMIND_ACTION_ID, value=run_id))
    if status in RETRYABLE_STATUSES:
        buttons.append(ButtonElement(text="Retry", action_id=ADMIN_RETRY_ACTION_ID, value=run_id))
    buttons.append(ButtonElement(text="Inspect", action_id=INSPECT_ACTION_ID, value=run_id))
    return buttons


def _newest_first(runs: Sequence[RunSummary]) -> list[RunSummary]:
    seen: set[str] = set()
    unique = []
    for run in runs:
        if run.run_id not in seen:
            seen.add(run.run_id)
            unique.append(run)
    return sorted(unique, key=lambda r: -float(r.updated_at or 0))


def _admin_blocks(admin: dict[str, Any]) -> list[Block]:
    page = int(admin.get("page", 0))
    runs = _newest_first(list(admin.get("runs") or []))
    has_next = bool(admin.get("has_next")) or len(runs) > HOME_PAGE_SIZE
    blocks: list[Block] = [
        DividerBlock(block_id="home|div"),
        HeaderBlock(block_id="home|runs", text=PlainTextObject(text="Paused runs")),
        ContextBlock(
            block_id="home|counts",
            elements=[MarkdownTextObject(text=f"{PAUSED_EXPLAINED} {_counts_line(admin.get('counts') or {})}")],
        ),
    ]
    if not runs:
        blocks.append(SectionBlock(block_id="home|noruns", text=MarkdownTextObject(text=_no_paused_runs(page))))
    for run in runs[:HOME_PAGE_SIZE]:
        run_id = run.run_id
        blocks.append(
            SectionBlock(block_id=_block_id("hr", run_id), text=MarkdownTextObject(text=_run_text(run, text_max=300)))
        )
        buttons = _run_buttons(run)
        if buttons:
            blocks.append(ActionsBlock(block_id=_block_id("hra", run_id), elements=buttons))
    if page > 0:
        prev = ButtonElement(text="◀ Previous", action_id=ADMIN_PAGE_ACTION_ID, value=str(page - 1))
        blocks.append(ActionsBlock(block_id="home|page|prev", elements=[prev]))
    if has_next:
        nxt = ButtonElement(text="Next ▶", action_id=ADMIN_PAGE_ACTION_ID, value=str(page + 1))
        blocks.append(ActionsBlock(block_id="home|page|next", elements=[nxt]))
    if page > 0 or has_next:
        blocks.append(ContextBlock(block_id="home|pageno", elements=[MarkdownTextObject(text=f"Page {page + 1}")]))
    return blocks


def home_view(
    *, waiting: list[dict[str, Any]], admin: dict[str, Any] | None, away: Away | None = None
) -> dict[str, Any]:
    """The Home tab: waiting questions, away status, then runs for admins.

    `waiting`: {"run_id", "agent", "reason", "permalink" or None, "asked_at", "now"}. `admin`: None,
    or {"counts": {status: n}, "runs": [RunSummary], "page": int, "has_next": bool}.
    """
    blocks: list[Block] = [HeaderBlock(block_id="home|waiting", text=PlainTextObject(text="Waiting on you"))]
    if not waiting:
        note = "Nothing is waiting on you."
        blocks.append(SectionBlock(block_id="home|none", text=MarkdownTextObject(text=note)))
    for n, entry in enumerate(waiting[:MAX_WAITING_SHOWN]):
        blocks.append(_waiting_section(n, entry))
    if len(waiting) > MAX_WAITING_SHOWN:
        more = f"…and {len(waiting) - MAX_WAITING_SHOWN} more."
        blocks.append(ContextBlock(block_id="home|more", elements=[MarkdownTextObject(text=more)]))
    blocks += away_blocks(away)
    if admin is not None:
        blocks += _admin_blocks(admin)
    view = View(type="home", blocks=blocks).to_dict()
    limits.check_view(view)
    return view


def runs_list_blocks(runs: Sequence[RunSummary], counts: dict[str, int]) -> list[dict[str, Any]]:
    """The ephemeral `/parley runs` reply: counts by status, newest runs with "Inspect"."""
    ordered = _newest_first(runs)
    shown = min(len(ordered), MAX_LISTED_RUNS)
    while True:
        blocks: list[Block] = [
            SectionBlock(text=MarkdownTextObject(text="*Paused runs*")),
            ContextBlock(elements=[MarkdownTextObject(text=f"{PAUSED_EXPLAINED} {_counts_line(counts)}")]),
        ]
        if not ordered:
            blocks.append(SectionBlock(text=MarkdownTextObject(text=_no_paused_runs(0))))
        blocks += [
            SectionBlock(
                text=MarkdownTextObject(text=_run_text(r, text_max=150)),
                accessory=ButtonElement(text="Inspect", action_id=INSPECT_ACTION_ID, value=r.run_id),
            )
            for r in ordered[:shown]
        ]
        footer = "Admins can cancel, remind and retry runs from the Parley Home tab."
        if len(ordered) > shown:
            footer = f"…and {len(ordered) - shown} more. " + footer
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=footer)]))
        out = [b.to_dict() for b in blocks]
        if shown == 0 or not limits.block_problems(out):
            limits.check_message_blocks(out)
            return out
        shown -= 1
