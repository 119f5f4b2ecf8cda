"""A run as Slack's agent session in its thread, and as an assistant thread's status.

Slack shows a session's status on the thread (https://docs.slack.dev/ai/agent-sessions/):
`processing` while the run works (with Slack's stop button), `suspended` while it is parked
on a question, and out of processing when it ends. The session title says what the run is,
and while it waits, who must answer. `closed` ends a session for good, so a run that may be
retried (a failure, an expiry) is left `active` instead. In a DM thread, which may be an
assistant thread, `assistant.threads.setStatus` says the same, and an empty status clears it.

The last status set is kept per run in Redis, so a replay repeats no call.
"""

from __future__ import annotations

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


def run_title(run: RunInfo) -> str:
    """The session's title: the agent and what it was asked, within Slack's 200 characters."""
    return truncate(f"{run.agent}: {run.text}" if run.text else run.agent, TITLE_MAX)


class SessionStatus:
    """Keeps a run's agent session (and assistant status) in step with the run."""

    def __init__(self, surfaces: AgentSurfaces) -> None:
        self.surfaces = surfaces
        self._names: dict[str, str] = {}

    def _changed(self, run: RunInfo, status: str, *, start: bool = False) -> bool:
        """Record `status` as the run's; False when it already was (a replay), or (unless `start`)
        when the run has no session: one is started with its thread only, never on a later step."""
        old = self.surfaces.store.swap_status(run.id, status, create=start)
        return old != status and (start or old is not None)

    def started(self, web: WebClient, run: RunInfo, conversation: dict[str, str]) -> None:
        """The run's thread exists: its session starts, processing, started by the run's starter."""
        if not self._changed(run, PROCESSING, start=True):
            return
        where = {"channel_id": conversation["channel"], "thread_ts": conversation["thread_ts"]}
        self.surfaces.call(
            web,
            run,
            "agents.sessions.setStatus",
            **where,
            status=PROCESSING,
            title=run_title(run),
            initiator_user_id=run.started_by,
        )
        self._assistant(web, run, where, "is working on it…")

    def waiting(self, web: WebClient, run: RunInfo, conversation: dict[str, str], people: list[str]) -> None:
        """The run is parked on a question for `people`: suspended, and the title says who must answer."""
        if not self._changed(run, SUSPENDED):
            return
        where = {"channel_id": conversation["channel"], "thread_ts": conversation["thread_ts"]}
        who = self.who(web, run, people)
        self.surfaces.call(web, run, "agents.sessions.setStatus", **where, status=SUSPENDED)
        title = truncate(f"{run.agent} is waiting for {who}", TITLE_MAX)
        self.surfaces.call(web, run, "agents.sessions.rename", **where, title=title)
        self._assistant(web, run, where, f"is waiting for {who}")

    def resumed(self, web: WebClient, run: RunInfo, conversation: dict[str, str]) -> None:
        """The run goes on after an answer: processing again, under its own title."""
        if not self._changed(run, PROCESSING):
            return
        where = {"channel_id": conversation["channel"], "thread_ts": conversation["thread_ts"]}
        self.surfaces.call(web, run, "agents.sessions.setStatus", **where, status=PROCESSING)
        self.surfaces.call(web, run, "agents.sessions.rename", **where, title=run_title(run))
        self._assistant(web, run, where, "is working on it…")

    def ended(self, web: WebClient, run: RunInfo, conversation: dict[str, str], how: str) -> None:
        """The run ended `how` (a `RunStatus` value): out of processing, never left "thinking"."""
        status = ENDS.get(how, ACTIVE)
        if not self._changed(run, status):
            return
        where = {"channel_id": conversation["channel"], "thread_ts": conversation["thread_ts"]}
        self.surfaces.call(web, run, "agents.sessions.setStatus", **where, status=status)
        self._assistant(web, run, where, "")

    def _assistant(self, web: WebClient, run: RunInfo, where: dict[str, str], status: str) -> None:
        """In a DM thread (an assistant thread, maybe), the assistant status says the same."""
        if where["channel_id"].startswith("D"):
            self.surfaces.call(web, run, "assistant.threads.setStatus", **where, status=status)

    def who(self, web: WebClient, run: RunInfo, people: list[str]) -> str:
        """`@alice, @bob and 2 more`: the people a question waits on, by their Slack names."""
        named = [f"@{self._name(web, run, p)}" for p in people[:NAMED]]
        if len(people) > NAMED:
            return f"{', '.join(named)} and {len(people) - NAMED} more"
        if len(named) > 1:
            return f"{', '.join(named[:-1])} and {named[-1]}"
        return named[0] if named else "an answer"

    def _name(self, web: WebClient, run: RunInfo, user: str) -> str:
        """A person's display name (users.info, remembered by this process); their id if unknown."""
        if user not in self._names:
            try:
                info = web.users_info(user=user)["user"]
                profile = info.get("profile") or {}
                self._names[user] = str(profile.get("display_name") or info.get("name") or user)
            except (SlackApiError, SlackClientError, OSError, KeyError, TypeError):
                log.info("no name for a person waited on", **run.log_context(), person=user)
                return user
        return self._names[user]
