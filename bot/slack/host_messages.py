"""How `SlackHost` shows a question's message as it changes: reposted, locked or superseded.

A question's message is posted once and then only updated in place (`chat.update`). It gets a
new version with fresh block ids whenever it is shown again. So a click on an older version is
refused by its stale block id. Once the question closes, its controls give way to its outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.slack import blocks, people
from bot.slack.blocks_context import superseded_blocks, superseded_text
from bot.slack.blocks_each import each_closed_blocks, progress_blocks
from bot.slack.host_agents import AgentSurfacesHost
from bot.slack.mrkdwn import user_ref
from bot.slack.unreachable import unless_unreachable
from workers.exceptions import NotInstalled
from workers.interaction import (
    ContextChange,
    GroupInfo,
    OnExpiry,
    QuestionInfo,
    QuestionProgress,
    QuestionState,
    RunInfo,
)
from workers.logs import Log
from workers.receipts.canonical import blocks_digest

log = Log("parley.slack")

NOT_NEEDED_DETAIL = "The run went on without this question (another one was answered first)."
SIBLING_EXPIRED_DETAIL = "Another question of this run expired without an answer."
DEFAULTS_DETAIL = "Nobody answered in time, so the run went on with the defaults."
EXPIRY_EVENT = "expired"
"""The run history's entry for a question's expiry (`CloseMode.EXPIRE.event`)."""


def expired_unanswered(questions: Iterable[QuestionInfo]) -> bool:
    """Whether one of `questions`, asked together, expired without its defaults counting as its answer.

    Such an expiry ends their wait (`group_scripts.CLOSE_MEMBER`): the others close unanswered.
    """
    return any(q.state is QuestionState.EXPIRED and q.request.on_expiry is not OnExpiry.USE_DEFAULTS for q in questions)


class QuestionMessages(AgentSurfacesHost):
    """Question messages for `SlackHost`: shown again, locked, superseded, or an `ask_each` tally."""

    def question_superseded(self, run: RunInfo, interrupt: QuestionInfo, changes: list[ContextChange]) -> None:
        """Replace the answered question with "Superseded: the facts changed" and what changed."""
        msg = interrupt.message
        if not msg.get("ts"):
            return
        body = superseded_blocks(interrupt.request, changes, answered_by=interrupt.answered_by)
        with unless_unreachable(_about(run, interrupt.id), "superseded question"):
            self._web(run).chat_update(
                channel=msg["channel"], ts=msg["ts"], text=superseded_text(interrupt.request), blocks=body
            )

    def group_progress(self, run: RunInfo, group: GroupInfo, progress: QuestionProgress) -> None:
        """Update an `ask_each` question's shared message: its progress, or once closed its outcome."""
        msg = group.message
        members = self.store.groups.members(group) if msg.get("ts") else []
        if not members:
            return
        req = members[0].request.model_copy(update={"assignees": list(group.people)})
        if progress.closed:
            expired = group.state != "cancelled" and expired_unanswered(members)
            body = each_closed_blocks(req, progress, cancelled=group.state == "cancelled", expired=expired)
            text = blocks.locked_text(req, f"Expired: {progress.summary}" if expired else progress.summary)
        else:
            version = int(msg.get("version", 1))
            body = blocks.question_blocks(
                req,
                group.id,
                version=version,
                assignees=list(group.people),
                context=members[0].context,
                changes=members[0].context_changes,
                reassignable=False,  # each person answers their own
            )
            body += progress_blocks(req, progress, group.id, version)
            text = blocks.fallback_text(req)
        with unless_unreachable({**run.log_context(), "group": group.id}, "question progress"):
            self._web(run).chat_update(channel=msg["channel"], ts=msg["ts"], text=text, blocks=body)

    def asked_by(self, run: RunInfo) -> str | None:
        """The line opening the run's question messages, saying who asked.

        None when the run's thread says it.
        """
        return None

    def declinable(self, run: RunInfo) -> bool:
        """Whether the run's question offers "Decline" (`bot.listeners.decline`): an agent's run's does not."""
        return False

    def refresh_question(self, interrupt: QuestionInfo, run: RunInfo) -> bool:
        """Post the open question again in place (`chat.update`), with who is asked and why.

        The message gets a new version, with fresh block ids. If the question closes meanwhile, the
        locked message is put back. So an answered question never shows controls again. Returns
        whether the question is still open then, so people may be pointed to it. A message Slack
        can no longer reach (`bot.slack.unreachable`) is left as it is, and nobody is pointed to it.
        """
        msg = interrupt.message
        if not msg.get("ts"):
            return False
        shown = False
        version = int(msg.get("version", 1)) + 1
        body = blocks.question_blocks(
            interrupt.request,
            interrupt.id,
            version=version,
            assignees=people.shown_assignees(interrupt),
            context=interrupt.context,
            changes=interrupt.context_changes,
            notes=people.notes(interrupt),
            asked_by=self.asked_by(run),
            declinable=self.declinable(run),
            claimed_by=interrupt.claimed_by,
        )
        with unless_unreachable(_about(run, interrupt.id), "question shown again"):
            self._web(run).chat_update(
                channel=msg["channel"], ts=msg["ts"], text=blocks.fallback_text(interrupt.request), blocks=body
            )
            shown = True
        if not shown:
            return False
        digest = {"blocks_digest": blocks_digest(body)} if msg.get("blocks_digest") else {}  # made with receipts on
        self.store.set_message(interrupt.id, {**msg, "version": version, **digest})
        now = self.store.interrupt(interrupt.id)
        if now is not None and now.state is not QuestionState.OPEN:
            self.lock_question(now, run)
        return now is not None and now.state is QuestionState.OPEN

    def _sibling_expired(self, interrupt: QuestionInfo) -> bool:
        """Whether `interrupt`, no longer needed, closed because a question asked with it expired unanswered.

        A host sees no group's members: the run's history names the group of each question that expired.
        """
        record = self.store.interrupt(interrupt.id)
        if record is None or not record.group:
            return False
        expired = [
            str(entry.detail.get("interrupt_id", ""))
            for entry in self.store.history(interrupt.run_id)
            if entry.event == EXPIRY_EVENT and entry.detail.get("group") == record.group
        ]
        return expired_unanswered(q for iid in expired if (q := self.store.interrupt(iid)) is not None)

    def lock_question(self, interrupt: QuestionInfo, run: RunInfo | None = None) -> None:
        """Replace the question's controls with its outcome: who answered what, or why it closed.

        A question of a workspace that uninstalled Parley has nobody to show it to, so it is skipped.
        So is one Slack can no longer reach (`bot.slack.unreachable`). An answer accepted there still
        resumes its run, once.
        """
        msg = interrupt.message
        if not msg.get("ts"):
            return
        run = run or self.store.get(interrupt.run_id)
        try:
            web = self._web(run)
        except NotInstalled as exc:
            log.info("question not locked: " + str(exc), **_about(run, interrupt.id))
            return
        req = interrupt.request
        if interrupt.state is QuestionState.ANSWERED:
            body = blocks.answered_blocks(
                req,
                interrupt.answers,
                answered_by=interrupt.answered_by,
                answered_at=interrupt.answered_at or 0.0,
                context=interrupt.context,
            )
            text = blocks.locked_text(req, f"Answered by {user_ref(interrupt.answered_by)}")
        elif interrupt.state is QuestionState.CANCELLED:
            by = interrupt.closed_by if interrupt.closed_by.startswith(("U", "W")) else None
            declined = interrupt.declined and self.declinable(run)  # its Decline button: MCP's `decline`
            body = blocks.closed_blocks(req, status="declined" if declined else "cancelled", by=by)
            text = blocks.locked_text(req, f"Declined by {user_ref(by)}" if declined and by else "Cancelled")
        elif interrupt.state is QuestionState.EXPIRED:
            defaults = req.on_expiry is OnExpiry.USE_DEFAULTS  # the run went on with them
            body = blocks.closed_blocks(req, status="expired", detail=DEFAULTS_DETAIL if defaults else "")
            text = blocks.locked_text(req, "Expired")
        elif interrupt.state is QuestionState.NOT_NEEDED and self._sibling_expired(interrupt):
            body = blocks.closed_blocks(req, status="closed", detail=SIBLING_EXPIRED_DETAIL)
            text = blocks.locked_text(req, "Closed")
        elif interrupt.state is QuestionState.NOT_NEEDED:
            body = blocks.closed_blocks(req, status="no longer needed", detail=NOT_NEEDED_DETAIL)
            text = blocks.locked_text(req, "No longer needed")
        else:
            return
        if asked_by := self.asked_by(run):
            body = [blocks.origin_block(asked_by), *body]
        with unless_unreachable(_about(run, interrupt.id), "closed question"):
            web.chat_update(channel=msg["channel"], ts=msg["ts"], text=text, blocks=body)


def _about(run: RunInfo, interrupt_id: str) -> dict[str, Any]:
    """The log fields of a line about one question of `run`."""
    return {**run.log_context(), "interrupt_id": interrupt_id}
