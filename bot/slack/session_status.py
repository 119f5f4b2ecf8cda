"""A run as Slack's agent session in its thread, and as an assistant thread's status.

Slack shows a session's status on the thread (https://docs.slack.dev/ai/agent-sessions/). It is
`processing` while the run works, with Slack's stop button. It is `suspended` while the run is
parked on a question. It leaves processing when the run ends. The session title says what the
run is, and while it waits, who must answer. `closed` ends a session for good. So a run that may
be retried, after a failure or an expiry, is left `active` instead. In a DM thread, which may be
an assistant thread, `assistant.threads.setStatus` says the same. An empty status clears it.

A run whose thread Parley started owns a session (`SESSION` in its conversation). The session
is created by the run's first status, with its title: a worker that starts the thread just
to ask creates it `suspended` at once, in one call. The last status set is kept per run in
Redis, so a replay repeats no call. A status Slack did not take is put back in Redis. So the
next change of the run, or a stop click once it ended, sends it again: a session never stays
processing behind a run that ended because one call failed.
"""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.slack.agent_surfaces import AgentSurfaces
from bot.slack.mrkdwn import truncate
from workers.interaction import RunInfo
from workers.logs import Log

log = Log("parley.slack.session")
TITLE_MAX = 200
"""Slack's limit on a session title (agents.sessions.setStatus, agents.sessions.rename)."""
NAMED = 3
"""How many of the people a question waits on the title names; the rest are counted."""
PROCESSING, SUSPENDED, ACTIVE, CLOSED = "processing", "suspended", "active", "closed"
ENDS = {"succeeded": CLOSED, "cancelled": CLOSED, "failed": ACTIVE, "expired": ACTIVE}
"""The session status each way a run ends leaves: closed when nothing more can happen."""
SESSION = "session"
"""The conversation field that says the run's thread is its agent session (Parley started it)."""
UNKNOWN_PEOPLE = frozenset({"user_not_found", "user_not_visible"})
"""`users.info` refusals that asking again will not change: the id is shown instead."""


def run_title(run: RunInfo) -> str:
    """The session's title: the agent and its request, within Slack's 200 characters."""
    return truncate(f"{run.agent}: {run.text}" if run.text else run.agent, TITLE_MAX)


class SessionStatus:
    """Keeps a run's agent session and assistant status in step with the run."""

    def __init__(self, surfaces: AgentSurfaces) -> None:
        self.surfaces = surfaces
        self._names: dict[str, str] = {}

    def started(self, web: WebClient, run: RunInfo, conversation: dict[str, Any]) -> None:
        """The run's thread exists and the run works on: its session starts, processing."""
        self._show(web, run, conversation, PROCESSING, run_title(run), "is working on it…")

    def waiting(self, web: WebClient, run: RunInfo, conversation: dict[str, Any], people: list[str]) -> None:
        """The run is parked on a question for `people`: suspended, and the title says who must answer."""
        old = self._swap(run, conversation, SUSPENDED)
        if old is not None:
            who = self.who(web, run, people)
            title = truncate(f"{run.agent} is waiting for {who}", TITLE_MAX)
            if not self._tell(web, run, conversation, SUSPENDED, old, title, f"is waiting for {who}"):
                self.surfaces.store.restore_status(run.id, SUSPENDED, old)

    def resumed(self, web: WebClient, run: RunInfo, conversation: dict[str, Any]) -> None:
        """The run goes on after an answer: processing again, under its own title."""
        self._show(web, run, conversation, PROCESSING, run_title(run), "is working on it…")

    def ended(self, web: WebClient, run: RunInfo, conversation: dict[str, Any], how: str) -> None:
        """The run ended `how` (a `RunStatus` value): out of processing, never left "thinking"."""
        self._show(web, run, conversation, ENDS.get(how, ACTIVE), None, "")

    def stopped_after_end(self, web: WebClient, run: RunInfo, conversation: dict[str, Any], how: str) -> None:
        """Someone clicked stop on a run that ended `how`: show its end again, whatever Redis holds.

        Slack shows the stop button only while a session is processing. A click after the end means
        Slack missed the end's status, so it is sent once more.
        """
        status = ENDS.get(how, ACTIVE)
        if not conversation.get(SESSION) or not self._shown_anywhere(run, conversation):
            return
        old = self.surfaces.store.swap_status(run.id, status, create=True) or PROCESSING
        if not self._tell(web, run, conversation, status, old, None, ""):
            self.surfaces.store.restore_status(run.id, status, old)

    def _show(
        self, web: WebClient, run: RunInfo, conversation: dict[str, Any], status: str, title: str | None, line: str
    ) -> None:
        """Record `status` as the run's, and tell Slack when its session must show it."""
        old = self._swap(run, conversation, status)
        if old is not None and not self._tell(web, run, conversation, status, old, title, line):
            self.surfaces.store.restore_status(run.id, status, old)

    def _swap(self, run: RunInfo, conversation: dict[str, Any], status: str) -> str | None:
        """Record `status` as the run's session status; the one it replaced ("": the session is new).

        None when Slack needs no call: the session shows `status` already (a replay), or the run
        has none, since only a thread Parley started gets one (`SESSION`)."""
        if not self._shown_anywhere(run, conversation):
            return None  # the workspace lacks both surfaces: no status to keep in step
        owned = bool(conversation.get(SESSION))
        old = self.surfaces.store.swap_status(run.id, status, create=owned)
        if old == status or (old is None and not owned):
            return None
        return old or ""

    def _shown_anywhere(self, run: RunInfo, conversation: dict[str, Any]) -> bool:
        """Whether the workspace has a session, or this DM thread an assistant status, to show."""
        if self.surfaces.available(run, "agents.sessions.setStatus"):
            return True
        dm = str(conversation.get("channel") or "").startswith("D")
        return dm and self.surfaces.available(run, "assistant.threads.setStatus")

    def _tell(
        self,
        web: WebClient,
        run: RunInfo,
        conversation: dict[str, Any],
        status: str,
        old: str,
        title: str | None,
        line: str,
    ) -> bool:
        """Set the session to `status`, renamed `title` (None: kept), and a DM thread's assistant line.

        A new session (`old` "") is created by the one call, with its title and who started it.
        False when Slack did not take the status, though the workspace has sessions: it failed."""
        where = {"channel_id": conversation["channel"], "thread_ts": conversation["thread_ts"]}
        setting = "agents.sessions.setStatus"
        if not old:
            title = title or run_title(run)
            shown = self.surfaces.call(
                web, run, setting, **where, status=status, title=title, initiator_user_id=run.started_by
            )
        else:
            shown = self.surfaces.call(web, run, setting, **where, status=status)
            if title is not None:
                self.surfaces.call(web, run, "agents.sessions.rename", **where, title=title)
        if where["channel_id"].startswith("D") and (line or old):  # an assistant thread, maybe
            self.surfaces.call(web, run, "assistant.threads.setStatus", **where, status=line)
        return shown is not None or not self.surfaces.available(run, setting)

    def who(self, web: WebClient, run: RunInfo, people: list[str]) -> str:
        """`@alice, @bob and 2 more`: the people a question waits on, by their Slack names."""
        named = [f"@{self._name(web, run, p)}" for p in people[:NAMED]]
        if len(people) > NAMED:
            return f"{', '.join(named)} and {len(people) - NAMED} more"
        if len(named) > 1:
            return f"{', '.join(named[:-1])} and {named[-1]}"
        return named[0] if named else "an answer"

    def _name(self, web: WebClient, run: RunInfo, user: str) -> str:
        """A person's display name (users.info, remembered by this process); their id if unknown.

        An id Slack does not know (or does not show) is remembered as the id: asking again would
        not change the answer. Any other failure is tried again next time."""
        if user not in self._names:
            try:
                info = web.users_info(user=user)["user"]
                profile = info.get("profile") or {}
                self._names[user] = str(profile.get("display_name") or info.get("name") or user)
            except SlackApiError as exc:
                log.info("no name for a person waited on", **run.log_context(), person=user, error=str(exc))
                if exc.response.get("error") not in UNKNOWN_PEOPLE:
                    return user
                self._names[user] = user
            except (SlackClientError, OSError, KeyError, TypeError):
                log.info("no name for a person waited on", **run.log_context(), person=user)
                return user
        return self._names[user]
