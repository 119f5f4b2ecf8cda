"""Which tenant (workspace, or org-wide installation) a request comes from, and which runs belong to it (OAuth mode).

With many workspaces, an admin of one sees and acts on that workspace's runs alone, and a
person's Home tab lists only the questions of the workspace they opened it in. The
workspace is the one bolt authorized the request for (`context.team_id`,
`context.enterprise_id`, `context.is_enterprise_install`): a team, or, for an org-wide
install, the whole Enterprise Grid organisation, where a payload may carry no team.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slack_bolt import BoltContext


@dataclass(frozen=True)
class Tenant:
    """One installation's workspace: a team, or (org-wide) an enterprise and every team in it."""

    team: str | None
    enterprise: str | None = None
    enterprise_install: bool = False

    @classmethod
    def of(cls, context: BoltContext) -> Tenant:
        return cls(
            team=context.team_id or None,
            enterprise=context.enterprise_id or None,
            enterprise_install=bool(context.is_enterprise_install),
        )

    def owns(self, conversation: Mapping[str, Any]) -> bool:
        """Whether a run with this conversation belongs to this workspace."""
        if self.enterprise_install and self.enterprise:
            return conversation.get("enterprise") == self.enterprise
        return bool(self.team) and conversation.get("team") == self.team


def owned(tenant: Tenant | None, conversation: Mapping[str, Any]) -> bool:
    """`tenant.owns(conversation)`; with no tenant (single-workspace mode) every run is owned."""
    return tenant is None or tenant.owns(conversation)
