"""What `SlackHost` shows on Slack's agent surfaces: session status, live plan, failure alerts.

It is a mixin, so the host's own module calls it only at the moments that matter. Those are when
the thread started, a question parked the run, a question closed, or the run ended or was
cancelled. The runtime's optional hooks are implemented here: `EndsSession.run_cancelled`,
`ShowsPlan.plan_named` and `plan_step`. Nothing here can fail a run
(`bot.slack.agent_surfaces`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.slack import people
from bot.slack.agent_surfaces import AgentSurfaces
from bot.slack.blocks import failed_text
from bot.slack.blocks_alert import failed_alert_blocks
from bot.slack.live_plan import LivePlan
from bot.slack.session_status import SessionStatus
from bot.slack.streamed_answer import stream_answer
from workers.exceptions import ParleyError
from workers.interaction import PausingRun, QuestionInfo, QuestionState, Request, RunInfo
from workers.registry import REGISTRY
from workers.runs import HostRecords, RunRecord, RunStatus, SurfaceStore

CLOSED_CARD = {
    QuestionState.ANSWERED: "complete",
    QuestionState.NOT_NEEDED: "complete",
    QuestionState.EXPIRED: "error",
    QuestionState.CANCELLED: "error",
}
"""How a closed question's card shows: done, or not (it expired or was cancelled)."""


class AgentSurfacesHost:
    """Session status and live plan for `SlackHost`.

    The host provides `_web`, `_thread` and `store`.
    """

    store: HostRecords

    def _web(self, run: RunInfo) -> WebClient:
        raise NotImplementedError

    def _thread(self, run: RunInfo, *, session: bool = True) -> dict[str, Any]:
        raise NotImplementedError

    def _post(self, run: RunInfo, text: str, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError

    @cached_property
    def _surfaces(self) -> AgentSurfaces:
        return AgentSurfaces(SurfaceStore(self.store.redis))

    @cached_property
    def sessions(self) -> SessionStatus:
        return SessionStatus(self._surfaces)

    @cached_property
    def plan(self) -> LivePlan:
        return LivePlan(self._surfaces, self._planned)

    def _planned(self, run: RunInfo, where: dict[str, Any]) -> None:
        """Turn the run's plan mark True, in Redis and wherever this process holds its thread."""
        raise NotImplementedError

    def _parked(self, run: PausingRun, request: Request) -> None:
        """A question parks the run: the session is suspended, naming who must answer.

        The question's card opens.
        """
        record = run.record
        asked = [run.interrupt] if run.interrupt is not None else list(run.asked_separately)
        who = list(dict.fromkeys(u for q in asked for u in people.shown_assignees(q))) or [run.started_by]
        web, where = self._web(record), self._thread(record)
        self.sessions.waiting(web, record, where, who)
        if run.interrupt_id and self.plan.shown(record.id, where):
            link = _permalink(web, run.question_message)
            self.plan.question(web, record, where, run.interrupt_id, request.reason, "in_progress", link)

    def _question_done(self, run: RunInfo, interrupt: QuestionInfo) -> None:
        """A question closed: its card shows how.

        An answer that resumed the run makes it processing.
        """
        status = CLOSED_CARD.get(interrupt.state)
        if status is None or (not run.conversation.get("thread_ts") and not self.plan.shown(run.id, run.conversation)):
            return
        web, where = self._web(run), self._thread(run)
        self.plan.question(web, run, where, interrupt.id, interrupt.request.reason, status)
        if interrupt.state is QuestionState.ANSWERED and _running(self.store, run):
            self.sessions.resumed(web, run, where)

    def _streamed(self, run: RunInfo, result: str) -> bool:
        """Stream the final answer of an agent answering in prose.

        False means post it as before.
        """
        try:
            if not REGISTRY.get(run.agent).streams:
                return False
        except ParleyError:  # an agent this process does not know (or cannot run) is not streamed
            return False
        return stream_answer(self._surfaces, self._web(run), run, self._thread(run), result)

    def _failure_alerted(self, run: RunInfo, reason: str) -> bool:
        """Post the failure as an `alert` where the workspace has the block.

        False means post it plain. A workspace without it refuses the message (`invalid_blocks`). That
        is remembered, and the post goes plain.
        """
        if not self._surfaces.available(run, "alert"):
            return False
        try:
            self._post(run, failed_text(reason), blocks=failed_alert_blocks(reason, run.id, show_retry=True))
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if error != "invalid_blocks":
                raise
            self._surfaces.refused(run, "alert", error)
            return False
        return True

    def _run_ended(self, run: RunInfo, how: str) -> None:
        """The run ended `how` (a `RunStatus` value): its plan finished, its session out of processing."""
        web, where = self._web(run), self._thread(run, session=False)  # a thread started now: its session ends
        self.plan.ended(web, run, where, ok=how == RunStatus.SUCCEEDED.value)
        self.sessions.ended(web, run, where, how)

    # ---- the runtime's optional hooks ------------------------------------------------------
    def run_cancelled(self, run: RunInfo) -> None:
        """The run was cancelled (Cancel, or Slack's stop button)."""
        if run.conversation.get("thread_ts"):
            self._run_ended(run, RunStatus.CANCELLED.value)

    def plan_named(self, run: RunInfo, steps: list[str]) -> None:
        self.plan.named(self._web(run), run, self._thread(run), steps)

    def plan_step(self, run: RunInfo, key: str, status: str) -> None:
        self.plan.step(self._web(run), run, self._thread(run), key, status)


def _permalink(web: WebClient, message: dict[str, Any]) -> str:
    """The question message's permalink for its card, empty when Slack gives none."""
    if not message.get("ts"):
        return ""
    try:
        return str(web.chat_getPermalink(channel=message["channel"], message_ts=message["ts"])["permalink"])
    except (SlackApiError, SlackClientError, OSError, KeyError):
        return ""


def _running(store: HostRecords, run: RunInfo) -> bool:
    """Whether the run is running: as its record says, when the caller read one (the execution that
    resumed it has it fresh), else as Redis has it now."""
    now = run if isinstance(run, RunRecord) else store.find(run.id)
    return now is not None and now.status is RunStatus.RUNNING
