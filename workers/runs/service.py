"""`RunService`: the door every host comes in by, the other half of `Interactor`.

`Interactor` is how the runtime reaches a host, to post a question or show a close. This is how
a host reaches the runtime. It starts runs, looks up questions, answers, declines, reassigns and
waits for a close. Admins list, inspect, cancel, remind and retry through it. Slack, the
terminal and the command line call it instead of the store or the runtime. Admin actions write
here and queue their effects for a worker, like a message's lock or a webhook. So a caller with
Redis alone does the whole of a cancel.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workers.interaction import Answer
from workers.registry import AgentRegistry
from workers.runs import inline
from workers.runs.lookup import lookup
from workers.runs.start import StartRefused, begin, create_run, start_run
from workers.runtime import admin, claims
from workers.runtime.acceptance import AnswerOutcome, accept, same_workspace, try_accept, unavailable, where_asked
from workers.runtime.decline import decline
from workers.runtime.people import reassign
from workers.runtime.retention import purge_finished
from workers.runtime.wiring import Runtime
from workers.store.away import Away
from workers.store.closings import Closings
from workers.store.proposals import Proposal
from workers.store.records import HistoryEntry, InterruptRecord, InterruptState, RefusalReason, RunRecord, RunStatus
from workers.store.refusal import Refusal
from workers.store.starts import StartLimits


@dataclass(frozen=True)
class Where:
    """Where an answer was given: workspace, organisation, channel and message, as known.

    `team=None` is a host without workspaces (the terminal). Acceptance then skips that check.
    """

    team: str | None = None
    enterprise: str | None = None
    channel: str | None = None
    message_ts: str | None = None


class RunService:
    """Runs as every host sees them, built once per process around its `Runtime`."""

    def __init__(self, runtime: Runtime, closings: Closings | None = None) -> None:
        self.runtime = runtime
        self.closings = closings  # set where something waits on closes (an asyncio process)

    @property
    def registry(self) -> AgentRegistry:
        return self.runtime.registry

    # ---- start ----------------------------------------------------------------
    def create(
        self, agent: str, text: str, user: str, conversation: dict[str, Any], *, limits: StartLimits | None = None
    ) -> RunRecord | StartRefused:
        """Create a queued run, within `limits` when given.

        `begin` sets it going.
        """
        return create_run(self.runtime, agent, text, user, conversation, limits=limits)

    def begin(self, run_id: str, *, inline: bool = False) -> str | None:
        """Queue a created run for a worker, or (`inline`) execute it here."""
        return begin(self.runtime, run_id, inline=inline)

    def start(
        self,
        agent: str,
        text: str,
        user: str,
        conversation: dict[str, Any],
        *,
        limits: StartLimits | None = None,
        before: Callable[[RunRecord], None] | None = None,
    ) -> RunRecord | StartRefused:
        """Create a run and queue it in one call, `before` running in between."""
        return start_run(self.runtime, agent, text, user, conversation, limits=limits, before=before)

    def first_delivery(self, key: str, ttl: float) -> bool:
        """Whether `key` is seen for the first time within `ttl` seconds.

        A key is an event or a command's trigger.
        """
        return self.runtime.store.first_delivery(key, ttl)

    # ---- read ------------------------------------------------------------------
    def run(self, run_id: str) -> RunRecord:
        """The run `run_id`, or `RunNotFound`."""
        return self.runtime.store.get(run_id)

    def find(self, run_id: str) -> RunRecord | None:
        return self.runtime.store.find(run_id)

    def interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        """The question `interrupt_id` as stored, or None."""
        return self.runtime.store.interrupt(interrupt_id) if interrupt_id else None

    def question(self, qid: str, user: str) -> InterruptRecord | AnswerOutcome:
        """The question a control names, or why there is none.

        In an `ask_each` group, it is `user`'s own question.
        """
        return lookup(self.runtime.store, qid, user)

    def thread_run(self, channel: str, thread_ts: str) -> RunRecord | None:
        """The run whose thread this is, if any."""
        run_id = self.runtime.store.thread_run(channel, thread_ts)
        return self.runtime.store.find(run_id) if run_id else None

    def waiting_on(self, user: str, limit: int = 20) -> list[str]:
        """The ids of the questions waiting on `user`, newest first."""
        return self.runtime.store.waiting_on(user, limit=limit)

    def history(self, run_id: str) -> list[HistoryEntry]:
        return self.runtime.store.history(run_id)

    def note(self, run_id: str, event: str, by: str = "", **detail: Any) -> None:
        """Add an entry to the run's history (a form Slack refused, say)."""
        self.runtime.store.add_history(run_id, event, by, **detail)

    # ---- answer ----------------------------------------------------------------
    def answer(
        self, interrupt: InterruptRecord, user: str, answers: list[Answer], *, token: str, where: Where
    ) -> AnswerOutcome:
        """Accept `user`'s answers once and queue the resume.

        Every refusal, Redis down included, comes back as an outcome.
        """
        return try_accept(
            self.runtime,
            interrupt,
            user,
            answers,
            team=where.team,
            enterprise=where.enterprise,
            channel=where.channel,
            message_ts=where.message_ts,
            token=token,
        )

    def answer_here(self, interrupt: InterruptRecord, user: str, answers: list[Answer]) -> list[Answer]:
        """Accept answers for a run this process executes next (the terminal).

        No worker job is queued. A refusal raises `AcceptRefused`.
        """
        return accept(self.runtime, interrupt, user, answers, resume_here=True).answers

    @staticmethod
    def unavailable(interrupt_id: str, user: str, team: str | None) -> AnswerOutcome:
        """The outcome when Redis was unreachable: nothing written, submit again."""
        return unavailable(interrupt_id, user, team)

    def decline(self, interrupt: InterruptRecord, user: str, *, where: Where) -> AnswerOutcome:
        """Close a declinable question as cancelled by `user`, once, locking its message."""
        return decline(
            self.runtime,
            interrupt,
            user,
            team=where.team,
            enterprise=where.enterprise,
            channel=where.channel,
            message_ts=where.message_ts,
        )

    def reassign(
        self, interrupt: InterruptRecord, *, by: str, to: str, is_admin: bool, to_is_bot: bool
    ) -> InterruptRecord:
        """Hand the question from `by` to `to`.

        The run's host is told through `Interactor.reassigned`. A refusal raises `ReassignRefused` and
        writes nothing.
        """
        return reassign(self.runtime, interrupt, by=by, to=to, is_admin=is_admin, to_is_bot=to_is_bot)

    def misplaced(self, interrupt: InterruptRecord, where: Where) -> Refusal | None:
        """Why a click on `interrupt` from `where` may not act on it, as an answer's would be refused.

        Claim, Release and Reassign act on the question like an answer. So they are taken only
        where an answer would be: its workspace (or its own channel, shared), on its own message.
        """
        if where.team is not None and not same_workspace(interrupt, where.team, where.enterprise, where.channel):
            return Refusal(RefusalReason.WRONG_TEAM, team=interrupt.team, payload_team=where.team)
        if not where_asked(interrupt, where.channel, where.message_ts):
            return Refusal(RefusalReason.WRONG_PLACE, channel=str(interrupt.message.get("channel", "")))
        return None

    def claim(self, interrupt: InterruptRecord, *, by: str) -> InterruptRecord:
        """`by` takes a question asked with `claim`, and the run's host shows it.

        A refusal raises `ClaimRefused`.
        """
        return claims.claim(self.runtime, interrupt, by=by)

    def release(self, interrupt: InterruptRecord, *, by: str, is_admin: bool) -> InterruptRecord:
        """Give a claimed question back to everyone asked.

        Its claimer or an admin may release it.
        """
        return claims.release(self.runtime, interrupt, by=by, is_admin=is_admin)

    def proposal(self, proposal_id: str) -> Proposal | None:
        """The answers read from a plain-words reply, waiting for the replier's Confirm."""
        return self.runtime.store.proposals.get(proposal_id)

    def take_proposal(self, proposal_id: str, user: str) -> Proposal | None:
        """The proposal, taken once, if `user` made it.

        Otherwise None, and nothing changes.
        """
        return self.runtime.store.proposals.take(proposal_id, user)

    def away(self, team: str, user: str) -> Away | None:
        """`user`'s ongoing absence in `team`: until when, and who answers meanwhile."""
        return self.runtime.store.away.get(team, user)

    def set_away(self, team: str, user: str, until: float, delegate: str, *, by: str) -> Away:
        """Send `user`'s new questions to `delegate` until `until`."""
        return self.runtime.store.away.set(team, user, until, delegate, by=by)

    def back(self, team: str, user: str) -> bool:
        """End `user`'s absence now, or False if they were not away."""
        return self.runtime.store.away.clear(team, user)

    async def wait(self, interrupt_id: str, timeout: float) -> InterruptRecord | None:
        """The question once it closes, or as it is after `timeout` seconds.

        The store's close notification (`Closings`) wakes it, never polling.
        """
        if self.closings is None:
            raise RuntimeError("this RunService has no Closings to wait on")
        fut = self.closings.watch(interrupt_id)
        try:
            now = await asyncio.to_thread(self.interrupt, interrupt_id)
            if now is None or now.state is not InterruptState.OPEN:
                return now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(fut), timeout)
        finally:
            self.closings.forget(interrupt_id, fut)
        return await asyncio.to_thread(self.interrupt, interrupt_id)

    # ---- execute here (the terminal) -----------------------------------------
    def execute_inline(self, run_id: str, notice: Callable[[str], None]) -> RunRecord:
        """Execute the run in this process, retrying here, until it leaves `queued`."""
        return inline.execute_inline(self.runtime, run_id, notice)

    def hand_back(self, run_id: str, by: str) -> None:
        """Let go of a run stopped inside a step: queued again for any worker."""
        inline.hand_back(self.runtime, run_id, by)

    def drop_job(self, job_id: str) -> None:
        """Withdraw a worker's job for a run this process executes itself."""
        inline.drop_job(self.runtime, job_id)

    # ---- admin -----------------------------------------------------------------
    def list_runs(
        self,
        status: RunStatus | None = None,
        *,
        page: int = 0,
        per_page: int = 20,
        where: admin.RunFilter | None = None,
    ) -> admin.RunPage:
        """One page of runs, newest first, only those `where` keeps."""
        return admin.list_runs(self.runtime, status, page=page, per_page=per_page, where=where)

    def summarize(self, run: RunRecord) -> admin.RunSummary:
        """`run` as listings show it, with the questions it waits on."""
        return admin.summarize(self.runtime, run)

    def counts(self, where: admin.RunFilter | None = None) -> dict[str, int]:
        """Runs by status, or only those `where` keeps."""
        return admin.count_runs(self.runtime, where)

    def show(self, run_id: str) -> admin.RunDetail:
        """Everything about one run an admin may look at."""
        return admin.show(self.runtime, run_id)

    def cancel(self, run_id: str, by: str) -> RunRecord:
        """Cancel a live run and queue its effects for a worker.

        The effects are the message's lock and its webhook.
        """
        return admin.cancel(self.runtime, run_id, by=by)

    def cancel_where(self, where: admin.RunFilter, by: str) -> list[RunRecord]:
        """Cancel every open run `where` keeps (an uninstalled workspace's)."""
        return admin.cancel_where(self.runtime, where, by=by)

    def retry(self, run_id: str, by: str) -> RunRecord:
        """Queue a failed or expired run again, keeping its recorded steps."""
        return admin.retry(self.runtime, run_id, by=by)

    def remind(self, run_id: str, by: str) -> InterruptRecord:
        """Mention the assignees of a paused run's question again."""
        return admin.remind(self.runtime, run_id, by=by)

    def purge(self, older_than: float, *, dry_run: bool = False) -> list[str]:
        """Delete runs finished over `older_than` seconds ago, returning their ids."""
        return purge_finished(self.runtime, older_than, dry_run=dry_run)
