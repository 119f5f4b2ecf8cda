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
from bot.slack.tenant import Tenant, owned
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

    def is_admin(self, user: str, context: BoltContext | None = None) -> bool:
        """An admin everywhere, or of the request's workspace: its team or enterprise."""
        if user in self.admins:
            return True
        tenant = Tenant.of(context) if context is not None else None
        where = (tenant.team, tenant.enterprise) if tenant else ()
        return any(user in self.team_admins.get(w, ()) for w in where if w)

    def admin_over(self, user: str, context: BoltContext | None, conversation: Mapping[str, Any]) -> bool:
        """Whether `user` may act as an admin on a run with `conversation`, from `context`'s workspace.

        An admin everywhere, or of the organisation, reaches the workspace's runs. A team's admin
        reaches its team's runs and runs of no team. So no team's admin acts on another team's run,
        from a shared channel or under an org-wide install.
        """
        if context is not None and not owned(self.tenant(context), conversation):
            return False
        if user in self.admins:
            return True
        tenant = Tenant.of(context) if context is not None else None
        if tenant is None:
            return False
        if tenant.enterprise and user in self.team_admins.get(tenant.enterprise, ()):
            return True
        team = conversation.get("team") or None
        return bool(tenant.team and user in self.team_admins.get(tenant.team, ()) and team in (None, tenant.team))

    def admin_filter(self, user: str, context: BoltContext) -> Callable[[RunRecord], bool] | None:
        """Keeps the runs `user` administers from `context`, or None for every run (an admin everywhere)."""
        if user in self.admins and self.tenant(context) is None:
            return None
        return lambda run: self.admin_over(user, context, run.conversation)

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
