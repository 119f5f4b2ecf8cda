"""What the bot's listeners need, built once by the bot's composition root."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from slack_bolt import BoltContext
from slack_sdk import WebClient

from bot.slack.host import SlackHost
from bot.slack.reply_reading import ReplyReader
from bot.slack.tenant import Tenant
from workers.logs import Log
from workers.runs import RunRecord, RunService, StartLimits

log = Log("parley.bot")


def _after_ack_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="parley-after-ack")


@dataclass
class BotDeps:
    runs: RunService
    """The door to the runs: start, answer, decline, reassign and the admins' actions."""
    client: WebClient
    slack: SlackHost
    admins: frozenset[str] = field(default_factory=frozenset)
    """Admins in every workspace (`PARLEY_ADMINS=U1,U2`)."""
    team_admins: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Admins of one workspace, by team id or (org-wide installs) enterprise id (`PARLEY_ADMINS=T1:U1;T2:U2`)."""
    pool: ThreadPoolExecutor = field(default_factory=_after_ack_pool)
    start_limits: StartLimits = field(default_factory=StartLimits)
    """How fast runs may be started from Slack (`PARLEY_STARTS_PER_USER`, `PARLEY_STARTS_PER_CHANNEL`,
    `PARLEY_OPEN_RUNS_PER_USER`)."""
    reader: ReplyReader | None = None
    """Reads plain-words replies with the model for the replier to confirm (`PARLEY_LLM_ANSWERS=on`)."""

    @property
    def many_workspaces(self) -> bool:
        """OAuth mode: each workspace has its own installation, and runs are scoped to it."""
        return self.slack.clients.many

    def tenant(self, context: BoltContext) -> Tenant | None:
        """The request's workspace in OAuth mode, or None (every run) with one workspace."""
        return Tenant.of(context) if self.many_workspaces else None

    def run_filter(self, context: BoltContext) -> Callable[[RunRecord], bool] | None:
        """Keeps the request's workspace runs in OAuth mode, or None with one workspace.

        None means every run.
        """
        tenant = self.tenant(context)
        return None if tenant is None else (lambda run: tenant.owns(run.conversation))

    def is_admin(self, user: str, context: BoltContext | None = None) -> bool:
        """An admin everywhere, or of the request's workspace: its team or enterprise."""
        if user in self.admins:
            return True
        tenant = Tenant.of(context) if context is not None else None
        where = (tenant.team, tenant.enterprise) if tenant else ()
        return any(user in self.team_admins.get(w, ()) for w in where if w)

    def after_ack(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a Web API call off the answer path, without holding up the ack.

        Why not a bolt lazy listener here? Bolt builds a lazy listener's request by re-parsing the whole
        form body. It does so on every click, before it responds. Profiled, that was a fifth of the
        Submit path's CPU. Only refusals need a call after the ack, since the worker shows an accepted
        answer. So they go to this pool.
        """

        def call() -> None:
            try:
                fn(*args)
            except Exception:
                log.error("call after the ack failed", exc=True)

        self.pool.submit(call)
