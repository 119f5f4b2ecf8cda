"""`ApiQuestionHost`: the Slack host of HTTP API questions (`conversation["host"] == "api"`).

It is the Slack host with a few differences, because an API question is one message, not a run's
thread:
- The question is posted where the caller asked: a channel, a DM, or the thread it named. There
  is no root "run started" message. Its own `ts` becomes the thread typed answers go to.
- The run's result, the answers as JSON, is not posted. The locked question shows them. A
  failure is told through the API and the run's history.
- When the question closes (answered, expired, cancelled), its webhook or Temporal signal is
  announced. The signal also goes when its run ends: a quorum's answers, or a failure.
- At most `MAX_ASSIGNEES` people are DMed about it, and as many on escalation, whatever user
  groups it names.
- The message opens with who asked and how, above the caller's text. An example is "Asked by
  *ci-bot* through the API", or MCP. There is no root message to say it.
- A question asked as an MCP elicitation has a "Decline" button beside Submit. Its metadata
  holds `elicitation`, so its conversation is `declinable`. The person who may answer it can
  refuse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackObjectFormationError

from bot.slack import blocks, people
from bot.slack.clients import WebClients
from bot.slack.host import SlackHost
from bot.slack.limits import BlockLimitError
from bot.slack.question_metadata import question_metadata
from bot.slack.unreachable import unless_unreachable, unreachable
from workers.exceptions import AgentError
from workers.interaction import Outcome, PausingRun, QuestionInfo, Request, RunInfo
from workers.logs import Log
from workers.questions.models import DECLINABLE, MAX_ASSIGNEES
from workers.runs import HostRecords

log = Log("parley.slack.api")
CANNOT_POST = frozenset(
    {"channel_not_found", "not_in_channel", "is_archived", "user_not_found", "cannot_dm_bot", "invalid_blocks"}
)
"""Errors no retry would fix: the question fails at once and the API says why."""

OnClosed = Callable[[RunInfo, QuestionInfo], Any]
OnEnded = Callable[[RunInfo, str, str], Any]
"""Told as the question's run ends: the run, its result ("" when it failed) and the reason it failed."""


class ApiQuestionHost(SlackHost):
    def __init__(
        self,
        client: WebClient | WebClients,
        store: HostRecords,
        on_closed: OnClosed | None = None,
        on_ended: OnEnded | None = None,
        on_closing: OnClosed | None = None,
    ) -> None:
        super().__init__(client, store)
        self._on_closed = on_closed
        self._on_ended = on_ended
        self._on_closing = on_closing  # before the message is locked: a Temporal signal waits on no Slack call

    def _to_tell(self, run: PausingRun) -> list[tuple[QuestionInfo, str]]:
        """Whom to DM about an API question: at most `MAX_ASSIGNEES`, as many as it may name.

        A user group among them may hold far more members. Those still see the question where it was
        asked.
        """
        return super()._to_tell(run)[:MAX_ASSIGNEES]

    def escalated(self, run: RunInfo, interrupt: QuestionInfo, added: list[str]) -> None:
        super().escalated(run, interrupt, added[:MAX_ASSIGNEES])  # as for the people first asked

    def asked_by(self, run: RunInfo) -> str | None:
        """The "Asked by *origin* through the API" line (or MCP), from the conversation."""
        conv = run.conversation
        return blocks.asked_by_line(str(conv.get("origin") or run.started_by), str(conv.get("via") or "api"))

    def declinable(self, run: RunInfo) -> bool:
        """An MCP elicitation question (`DECLINABLE` in its conversation) offers "Decline"."""
        return bool(run.conversation.get(DECLINABLE))

    def _conversation(self, run: RunInfo) -> dict[str, Any]:
        if run.conversation.get("thread_ts"):
            return run.conversation
        return self.store.get(run.id).conversation  # the question's own ts may have become the thread since

    def _post(self, run: RunInfo, text: str, **kwargs: Any) -> dict[str, Any]:
        conv = self._conversation(run)
        thread = {"thread_ts": conv["thread_ts"]} if conv.get("thread_ts") else {}
        resp = self._web(run).chat_postMessage(
            channel=conv["channel"], text=text, unfurl_links=False, unfurl_media=False, **thread, **kwargs
        )
        return {"channel": resp["channel"], "ts": resp["ts"]}

    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        record = run.record
        conv = record.conversation
        if run.question_message.get("ts"):
            self._tell(run)  # posted before this replay; people not told yet are told now
            return Outcome(paused=True)
        iid = run.interrupt_id or ""
        if run.question_may_be_posted and conv.get("thread_ts") and (found := self._posted_before(record, iid)):
            run.record_question_message({**found, "version": 1})
            return Outcome(paused=True)
        self._resolve_groups(run)  # user groups among the assignees become their members, as for any question
        asked = people.shown_assignees(run.interrupt) if run.interrupt else list(request.assignees)
        try:
            question = self._templates.blocks(
                request,
                iid,
                assignees=asked,
                context=run.question_context,
                changes=run.context_changes,
                asked_by=self.asked_by(record),
                declinable=self.declinable(record),
            )
        except (BlockLimitError, SlackObjectFormationError) as exc:
            raise AgentError(f"this question cannot be shown in Slack: {exc}") from exc
        self._join(self._web(record), conv["channel"])
        try:
            posted = self._post(record, blocks.fallback_text(request), blocks=question, metadata=question_metadata(iid))
        except SlackApiError as exc:
            error = exc.response.get("error")
            if error in CANNOT_POST or unreachable(exc):
                raise AgentError(f"Slack refused to post the question in {conv['channel']}: {error}") from exc
            raise
        run.record_question_message({**posted, "version": 1}, shown=question)
        thread = conv.get("thread_ts") or posted["ts"]
        if self.store.thread_run(posted["channel"], thread) is None:
            threaded = {**conv, "channel": posted["channel"], "thread_ts": thread}
            self.store.set_thread(record.id, threaded)
            self._threads.started(record.id, threaded)
        log.info("question posted", **{**record.log_context(), "interrupt_id": iid}, message_ts=posted["ts"])
        self._tell(run)
        return Outcome(paused=True)

    def _tell(self, run: PausingRun) -> None:
        """DM the people asked a link to a channel question.

        A DM question is in their DM already.
        """
        if not str(run.record.conversation.get("channel", "")).startswith(("U", "W", "D")):
            self._tell_asked(run)

    def plan_named(self, run: RunInfo, steps: list[str]) -> None:
        """Nothing, since an API question's thread holds only the question, never a plan."""

    def plan_step(self, run: RunInfo, key: str, status: str) -> None:
        """Nothing, as `plan_named`: the question's own steps are Parley's, not the caller's."""

    def finished(self, run: RunInfo, result: str) -> None:
        """Nothing to post: the locked question already shows the answers."""
        if self._on_ended is not None:
            self._on_ended(run, result, "")

    def failed(self, run: RunInfo, reason: str) -> None:
        """Nothing to post.

        The caller learns it from the API (`status`, `error`), and admins from the run's history. An
        expired question's message already says so.
        """
        log.info("question failed", **run.log_context(), reason=reason)
        if self._on_ended is not None:
            self._on_ended(run, "", reason)

    def remind(self, run: RunInfo, interrupt: QuestionInfo, *, last_call: bool = False) -> None:
        if interrupt.assignees or last_call:
            super().remind(run, interrupt, last_call=last_call)
        else:
            with unless_unreachable({**run.log_context(), "interrupt_id": interrupt.id}, "reminder"):
                self._post(run, ":bell: Reminder: the question above is still waiting for an answer from anyone here.")

    def question_closed(self, run: RunInfo, interrupt: QuestionInfo) -> None:
        if self._on_closing is not None:
            self._on_closing(run, interrupt)
        self.lock_question(interrupt, run)
        if self._on_closed is not None:
            self._on_closed(run, interrupt)
