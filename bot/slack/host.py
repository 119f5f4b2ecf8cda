"""`SlackHost`: the runtime's host for runs that talk in a Slack thread.

It posts the run's root message, its questions, progress and outcome. It locks question messages
when they close. Questions are posted once. The interrupt is recorded before posting, and the
posted `ts` right after. A replay finds it. A replay finding no `ts` looks for the message in
the thread by its metadata (`bot.slack.question_metadata`). Only then does it post.

Where the thread goes: in a public channel, Parley joins first (`conversations.join`,
`channels:join`). It does so once per channel per process every `recent.JOIN_TTL`. Slack
delivers a channel's messages, and so typed answers, only to its members. Parley may be unable
to post in a conversation. That is a DM or group DM between people, or a private channel it was
not invited to. The thread then goes to the starter's DM with Parley instead.

How a posted question's message changes afterwards is `bot.slack.host_messages`.
"""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackObjectFormationError

from bot.slack import blocks, limits, people
from bot.slack.blocks_each import progress_blocks
from bot.slack.clients import WebClients
from bot.slack.host_messages import QuestionMessages
from bot.slack.last_call import last_call_text
from bot.slack.limits import BlockLimitError
from bot.slack.live_plan import PLANNED
from bot.slack.mrkdwn import escape, mentions_anyone, user_ref, with_mentions
from bot.slack.question_metadata import find_question, question_metadata
from bot.slack.question_templates import QuestionTemplates
from bot.slack.recent import JoinedChannels, StartedThreads
from bot.slack.session_status import SESSION
from bot.slack.unreachable import unless_unreachable, unreachable
from workers.exceptions import AgentError
from workers.interaction import (
    Outcome,
    PausingRun,
    QuestionInfo,
    Request,
    RunInfo,
)
from workers.logs import Log
from workers.receipts.canonical import blocks_digest
from workers.runs import HostRecords


def slack_refusal(response: Any) -> str:
    """Slack's refusal in words: its error, then any `errors` or `response_metadata.messages` sent."""
    error = str(response.get("error") or "no error given")
    details = response.get("errors") or (response.get("response_metadata") or {}).get("messages") or []
    return f"{error} ({'; '.join(str(d) for d in details)})" if details else error


log = Log("parley.slack")
CANNOT_POST_HERE = frozenset({"channel_not_found", "not_in_channel"})
"""Errors of a post in a conversation Parley is not part of (and, for a DM or group DM, cannot join)."""


class SlackHost(QuestionMessages):
    """Talks in the run's thread through the Web API, needing `chat:write`.

    `client` is the one `WebClient`, in single-workspace mode. In OAuth mode, it is the `WebClients`
    picking each run's workspace client from the installation store.
    """

    def __init__(self, client: WebClient | WebClients, store: HostRecords, *, notify_assignees: bool = True) -> None:
        self.clients = client if isinstance(client, WebClients) else WebClients(single=client)
        self.client = self.clients.single
        self.store = store
        self._joined = JoinedChannels()
        self._threads = StartedThreads()
        self._templates = QuestionTemplates()  # a question asked again is not built again
        self.notify_assignees = notify_assignees  # PARLEY_NOTIFY_ASSIGNEES: DM the people asked

    def _web(self, run: RunInfo) -> WebClient:
        """The client with the bot token of the installation that owns `run`."""
        return self.clients.for_conversation(run.conversation)

    # ---- the thread ------------------------------------------------------------
    def start_thread(
        self, run: RunInfo, conversation: dict[str, Any] | None = None, *, session: bool = True
    ) -> dict[str, Any]:
        """Post the run's root message unless it has one; returns the conversation with `thread_ts`.

        `conversation`: the run's as Redis has it now, when it was read again after the run.
        The thread is the run's agent session. Without `session` it is not shown processing yet:
        the caller sets the run's next status at once (parked, ended), which creates it."""
        conv = dict(run.conversation if conversation is None else conversation)
        if conv.get("thread_ts"):
            return conv
        text = blocks.run_started_text(run.started_by, run.agent, run.text)
        web = self._web(run)
        self._join(web, conv["channel"])
        try:
            resp = web.chat_postMessage(channel=conv["channel"], text=text, unfurl_links=False, unfurl_media=False)
        except SlackApiError as exc:
            if exc.response.get("error") not in CANNOT_POST_HERE:
                raise
            log.info("cannot post where the run was started; using the starter's DM", **run.log_context())
            conv["started_in"] = conv["channel"]
            resp = web.chat_postMessage(channel=run.started_by, text=text, unfurl_links=False, unfurl_media=False)
        conv["channel"], conv["thread_ts"], conv[SESSION], conv[PLANNED] = resp["channel"], resp["ts"], True, False
        self.store.set_thread(run.id, conv)
        self._threads.started(run.id, conv)
        log.info("thread started", **run.log_context(), thread_ts=resp["ts"])
        if session:
            self.sessions.started(web, run, conv)
        return conv

    def _join(self, web: WebClient, channel: str) -> None:
        """Join a public channel before talking there, so its thread replies reach Parley.

        Only channel ids (C…) can be joined. Slack refuses private channels, DMs and group DMs
        (`method_not_supported_for_channel_type`). The post then decides.
        """
        if not channel.startswith("C") or self._joined.fresh(channel):
            return
        try:
            web.conversations_join(channel=channel)
            self._joined.joined(channel)
        except SlackApiError as exc:
            log.info("did not join the channel", channel=channel, error=exc.response.get("error"))

    def _thread(self, run: RunInfo, *, session: bool = True) -> dict[str, Any]:
        """The run's thread: as the run was read, as this process started it, or as Redis has it
        now (another process may have started it since the run was read). `session`: as for
        `start_thread`, should this start it."""
        if run.conversation.get("thread_ts"):
            return run.conversation
        if (started := self._threads.get(run.id)) is not None:
            return started
        return self.start_thread(run, self.store.conversation(run.id), session=session)

    def _planned(self, run: RunInfo, where: dict[str, Any]) -> None:
        """The run has a plan now: its thread's mark turns True here and in Redis."""
        where[PLANNED] = True
        if run.conversation.get("thread_ts") == where.get("thread_ts"):
            run.conversation[PLANNED] = True  # the record this execution holds, read before the plan began
        self.store.set_thread(run.id, where)
        if self._threads.get(run.id) is not None:
            self._threads.started(run.id, where)

    def _post(self, run: RunInfo, text: str, **kwargs: Any) -> dict[str, Any]:
        conv = self._thread(run)
        resp = self._web(run).chat_postMessage(
            channel=conv["channel"],
            thread_ts=conv["thread_ts"],
            text=text,
            unfurl_links=False,
            unfurl_media=False,
            **kwargs,
        )
        return {"channel": resp["channel"], "ts": resp["ts"]}

    # ---- Interactor ------------------------------------------------------------
    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        if run.question_message.get("ts"):
            self._tell_asked(run)  # posted before this replay; people not told yet are told now
            self._parked(run, request)
            return Outcome(paused=True)
        record = run.record
        iid = run.interrupt_id or ""
        if run.question_may_be_posted and (found := self._posted_before(record, iid)):
            run.record_question_message({**found, "version": 1})
            log.info("question found posted", **{**record.log_context(), "interrupt_id": iid}, message_ts=found["ts"])
            self._tell_asked(run)
            self._parked(run, request)
            return Outcome(paused=True)
        self._resolve_groups(run)
        asked = people.shown_assignees(run.interrupt) if run.interrupt else list(request.assignees)
        notes = people.notes(run.interrupt) if run.interrupt else []  # e.g. a delegate for someone away
        progress = run.question_progress  # put to each person separately, who answer their own
        try:
            if notes or progress is not None:
                question = blocks.question_blocks(
                    request,
                    iid,
                    assignees=asked or [run.started_by],
                    context=run.question_context,
                    changes=run.context_changes,
                    notes=notes,
                    reassignable=progress is None,
                )
            else:
                question = self._templates.blocks(
                    request,
                    iid,
                    assignees=asked or [run.started_by],
                    context=run.question_context,
                    changes=run.context_changes,
                )
            if progress is not None:
                question += progress_blocks(request, progress, iid, 1)
                limits.check_message_blocks(question)
        except (BlockLimitError, SlackObjectFormationError) as exc:
            raise AgentError(f"this question cannot be shown in Slack: {exc}") from exc
        self._thread(record, session=False)  # a thread started for this question: its session starts parked
        try:
            posted = self._post(record, blocks.fallback_text(request), blocks=question, metadata=question_metadata(iid))
        except SlackApiError as exc:
            if exc.response.get("error") in ("invalid_blocks", "msg_blocks_too_long"):
                raise AgentError(f"Slack refused the question's blocks: {slack_refusal(exc.response)}") from exc
            if unreachable(exc):  # the channel archived, Parley removed, the app uninstalled: nobody could answer
                raise AgentError(f"Slack refused the question: {slack_refusal(exc.response)}") from exc
            raise
        # Recorded at once when people are told of it next (their DMs link to it); else by the park.
        run.record_question_message({**posted, "version": 1}, parked_next=not self._to_tell(run), shown=question)
        log.info("question posted", **{**record.log_context(), "interrupt_id": iid}, message_ts=posted["ts"])
        self._tell_asked(run)
        self._parked(run, request)
        return Outcome(paused=True)

    def _resolve_groups(self, run: PausingRun) -> None:
        """Replace user groups among the assignees and escalation people by their members."""
        q = run.interrupt
        if q is None or q.groups or not people.has_groups([*q.assignees, *q.escalate_to]):
            return
        assignees, groups = people.resolve_groups(self._web(run.record), q.assignees)
        escalate_to, more = people.resolve_groups(self._web(run.record), q.escalate_to)
        run.record_assignees(assignees, {**groups, **more}, escalate_to if q.escalate_to else None)

    def _to_tell(self, run: PausingRun) -> list[tuple[QuestionInfo, str]]:
        """Whom `_tell_asked` DMs, each with their question: all asked but the starter."""
        if not self.notify_assignees:
            return []
        # `ask_each`: each person's own question, all shown by the one shared message.
        asked = [run.interrupt] if run.interrupt is not None else run.asked_separately
        return [(q, user) for q in asked for user in q.assignees if user != run.started_by]

    def _tell_asked(self, run: PausingRun) -> None:
        """DM each person asked, but the starter, a link to the question, once each."""
        text = f"{user_ref(run.started_by)}'s run *{escape(run.record.agent)}* is asking you a question."
        for q, user in self._to_tell(run):
            self._notify(run.record, q, user, text, message=run.question_message)

    def _notify(
        self, run: RunInfo, q: QuestionInfo, user: str, text: str, message: dict[str, Any] | None = None
    ) -> None:
        """DM `user` of question `q`; if their account is gone, say so in the run's thread instead."""
        if people.notify(self._web(run), self.store.people, q, user, text, message=message) is not people.Told.GONE:
            return
        about = {**run.log_context(), "interrupt_id": q.id, "user": user}
        with unless_unreachable(about, "note of a person gone"):
            self._post(run, people.gone_note(q, user, run.started_by))
            log.info("thread told a person cannot be reached", **about)

    def _posted_before(self, run: RunInfo, iid: str) -> dict[str, Any] | None:
        """Where an earlier execution posted question `iid` without learning its `ts`, if so.

        What was shown is known from the blocks Slack returns with it.
        """
        conv = self._thread(run)
        try:
            found = find_question(self._web(run), conv["channel"], conv["thread_ts"], iid)
        except SlackApiError as exc:
            log.warning("could not read the thread; posting the question", **run.log_context(), error=str(exc))
            return None
        if found is None:
            return None
        shown = blocks_digest(found["blocks"]) if isinstance(found.get("blocks"), list) else ""
        return {"channel": conv["channel"], "ts": str(found["ts"]), **({"blocks_digest": shown} if shown else {})}

    # ---- Host ------------------------------------------------------------------
    def say(self, run: RunInfo, text: str) -> None:
        with unless_unreachable(run.log_context(), "progress note"):
            self._post(run, blocks.progress_text(text))

    def finished(self, run: RunInfo, result: str) -> None:
        """Post the run's result in its thread.

        It may mention who started or answered the run (`<@U…>`). The plan and session are ended first.
        So the post is the last thing this effect does. Nothing after the post may fail, as when Redis
        is away. A failed effect is repeated, and so would be the post.
        """
        text = blocks.final_text(result)
        if mentions_anyone(text):  # only then is the history read, for who answered
            answered = (h.by for h in self.store.history(run.id) if h.event == "answered" and h.by)
            text = with_mentions(text, {run.started_by, *answered})
        self._run_ended(run, "succeeded")
        with unless_unreachable(run.log_context(), "result"):  # a thread gone for good: the run still succeeds
            if not self._streamed(run, result):  # an answer in prose is streamed (`host_agents`)
                self._post(run, text)

    def failed(self, run: RunInfo, reason: str) -> None:
        """Post the failure or expiry in the thread, as an alert where Slack has one.

        Otherwise it is plain (`host_agents`). As in `finished`, the plan and session are ended before
        the one post.
        """
        self._run_ended(run, "failed")
        with unless_unreachable({**run.log_context(), "reason": reason}, "failure"):
            if not self._failure_alerted(run, reason):
                body = blocks.failed_blocks(reason, run.id, show_retry=True)
                self._post(run, blocks.failed_text(reason), blocks=body)

    def question_closed(self, run: RunInfo, interrupt: QuestionInfo) -> None:
        self.lock_question(interrupt, run)
        self._question_done(run, interrupt)

    def remind(self, run: RunInfo, interrupt: QuestionInfo, *, last_call: bool = False) -> None:
        with unless_unreachable({**run.log_context(), "interrupt_id": interrupt.id}, "reminder"):
            if last_call:
                self._post(run, last_call_text(self._web(run), interrupt))
                return
            who = ", ".join(user_ref(u) for u in interrupt.assignees)
            self._post(run, f":bell: Reminder: {who}, a question above is waiting for your answer.")

    def escalated(self, run: RunInfo, interrupt: QuestionInfo, added: list[str]) -> None:
        """Show the escalation on the question, and DM each added person a link.

        A question closed meanwhile is only locked, and nobody is told.
        """
        if not self.refresh_question(interrupt, run):
            return
        waited = people.waited(interrupt)
        text = "A question was escalated to you" + (f": it was unanswered after {waited}." if waited else ".")
        for user in added:
            self._notify(run, interrupt, user, text)

    def claimed(self, run: RunInfo, interrupt: QuestionInfo, *, by: str, released: bool) -> None:
        """Show who holds the question: "Claimed by …" and Release, or Claim again."""
        self.refresh_question(interrupt, run)

    def reassigned(self, run: RunInfo, interrupt: QuestionInfo, *, by: str, to: str) -> None:
        """Show the reassignment on the question, and DM the new assignee a link.

        A question closed meanwhile is only locked, and `to` is not told.
        """
        if not self.refresh_question(interrupt, run):
            return
        self._notify(run, interrupt, to, f"{user_ref(by)} reassigned a question to you.")

    def people(self, run: RunInfo, ids: list[str]) -> list[str]:
        """`ids` with each user group replaced by its members (`usergroups.users.list`)."""
        return people.resolve_groups(self._web(run), ids)[0]
