"""Uninstalls: `app_uninstalled` and `tokens_revoked` end a workspace's installation and runs.

Slack sends one of these events when a workspace removes Parley or revokes its bot token. Parley
can no longer talk there. The workspace's installation is deleted from the installation store
(OAuth mode). Every open run of that workspace is cancelled through the ordinary cancel path
(`RunService.cancel_where`). So each gets its `cancelled` history entry, and nobody waits on its
question. The event is acked first. The work runs after the ack in a bolt lazy listener, since a
workspace may have many runs. Bolt does not call `auth.test` for these events, as the token is
already gone. It routes them without an installation.

A `tokens_revoked` naming only user tokens leaves the bot, and so the runs, alone.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App, BoltContext

from bot.deps import BotDeps
from bot.slack.tenant import Tenant
from workers.logs import Log

log = Log("parley.installs")


def ack_install_event(ack: Ack) -> None:
    ack()


def forget_workspace(deps: BotDeps, tenant: Tenant, why: str) -> int:
    """Delete `tenant`'s installation and cancel its open runs, returning how many."""
    installations = deps.slack.clients.installations
    if installations is not None:
        team = None if tenant.enterprise_install else tenant.team
        installations.delete_all(enterprise_id=tenant.enterprise, team_id=team)
    if not (tenant.team or (tenant.enterprise_install and tenant.enterprise)):
        log.warning("uninstall with no workspace; nothing to cancel", event=why)
        return 0
    cancelled = deps.runs.cancel_where(lambda run: tenant.owns(run.conversation), by=f"slack:{why}")
    log.info(
        "workspace uninstalled; its runs cancelled",
        team=tenant.team,
        enterprise=tenant.enterprise,
        event=why,
        cancelled=[r.id for r in cancelled],
    )
    return len(cancelled)


def on_app_uninstalled(context: BoltContext, deps: BotDeps) -> None:
    forget_workspace(deps, Tenant.of(context), "app_uninstalled")


def on_tokens_revoked(event: dict[str, Any], context: BoltContext, deps: BotDeps) -> None:
    tokens = event.get("tokens") or {}
    if tokens.get("bot"):
        forget_workspace(deps, Tenant.of(context), "tokens_revoked")
        return
    installations = deps.slack.clients.installations
    if installations is not None:  # user tokens only: Parley asks for none, but forget any it holds
        tenant = Tenant.of(context)
        team = None if tenant.enterprise_install else tenant.team
        for user in tokens.get("oauth") or []:
            installations.delete_installation(enterprise_id=tenant.enterprise, team_id=team, user_id=user)


def register(app: App, deps: BotDeps) -> None:
    app.event("app_uninstalled")(ack=ack_install_event, lazy=[partial(on_app_uninstalled, deps=deps)])
    app.event("tokens_revoked")(ack=ack_install_event, lazy=[partial(on_tokens_revoked, deps=deps)])
