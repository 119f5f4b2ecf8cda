"""Which tenant a request comes from, and which runs belong to it (OAuth mode).

A tenant is a workspace, or an org-wide installation. With many workspaces, an admin of one sees
and acts on only that workspace's runs. A person's Home tab lists only the questions of the
workspace they opened it in. The workspace is the one bolt authorized the request for. That is
`context.team_id`, `context.enterprise_id` and `context.is_enterprise_install`. It is a team, or
for an org-wide install the whole Enterprise Grid organisation. There a payload may carry no
team.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slack_bolt import BoltContext


@dataclass(frozen=True)
class Tenant:
    """One installation's workspace: a team, or an enterprise and all its teams.

    The latter is an org-wide install.
    """

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
    """`tenant.owns(conversation)`, with every run owned when there is no tenant.

    No tenant means single-workspace mode.
    """
    return tenant is None or tenant.owns(conversation)
