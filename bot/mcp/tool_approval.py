"""One tool call put to people for approval: what they see and may edit, and their decision.

`approve_tool_use` (Claude Code's permission prompt) and the gateway's `ask` rule both ask
through here. The arguments are shown with the rule's `redact` paths as "••••". Every redacted
value is scrubbed from the rest (`bot.mcp.scrub`). An argument holding anything redacted is
never editable. Arguments too long to bind whole are shown in part, bound by digest, and never
editable. Once approved, the arguments are the call's, with the approver's edits applied. Each
redacted value is put back from the call. The approval is asked in the rules file's `channel`,
of its `assignees`. It expires after its `expires_in`. Each host words the verdict for its own
client. Claude Code reads allow or deny, a gateway caller a tool error.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from bot.mcp.gateway.deadlines import human
from bot.mcp.rules import RulesConfig
from bot.mcp.scrub import Redaction
from workers.interaction import ContextError, FormError
from workers.interaction.approval import approval_request, approved_args
from workers.questions.models import QuestionCreate, QuestionStatus, QuestionView


@dataclass(frozen=True)
class Verdict:
    """How people decided a tool call: approved with `arguments`, or not, and why."""

    status: QuestionStatus
    arguments: dict[str, Any] | None = None  # None: not approved
    why: str = ""  # not approved: the reason given, or why it closed without one
    by: str = ""
    edited: bool = False
    standing: bool = False

    @property
    def approved(self) -> bool:
        return self.arguments is not None

    @property
    def rejected(self) -> bool:
        """People answered, and said no."""
        return self.status is QuestionStatus.ANSWERED and self.arguments is None


@dataclass(frozen=True)
class ToolApproval:
    """One call's arguments under one rule, with the rules file's channel, approvers, expiry."""

    arguments: dict[str, Any]
    redact: tuple[str, ...]
    config: RulesConfig

    @cached_property
    def redaction(self) -> Redaction:
        return Redaction(self.arguments, self.redact)

    @property
    def shown(self) -> dict[str, Any]:
        return self.redaction.shown

    def question(
        self,
        action: str,
        *,
        reason: str | None = None,
        schema: dict[str, Any] | None = None,
        standing: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> QuestionCreate:
        """The approval people are asked.

        `ValueError` when the call cannot be shown or asked. `schema`: the tool's input schema. It types
        the editable arguments where Parley's items fit it. Otherwise it is what an edit must meet.
        `standing`: the label of a standing approval, when one may be given.
        """
        if self.config.channel is None:
            raise ValueError("the rules file names no `channel` to ask in")
        options: dict[str, Any] = {
            "fixed": [key for key in self.shown if key not in self.redaction.editable],
            "in_part": True,
            "assignees": list(self.config.assignees),
            "expires_in": self.config.expires_in,
            "standing": standing,
            "reason": reason,
        }
        try:
            try:
                request = approval_request(action, self.shown, schema=schema, **options)
            except FormError:
                if schema is None:
                    raise
                request = approval_request(action, self.shown, input_schema=schema, **options)  # the values type it
        except (FormError, ContextError) as exc:
            raise ValueError(str(exc)) from None
        assert request.approval is not None
        bound = request.approval.args  # the arguments as shown, long ones in part
        return QuestionCreate(request=request, channel=self.config.channel, context=bound, metadata=metadata or {})

    def verdict(self, view: QuestionView) -> Verdict | None:
        """What people decided once the approval closed, None while it waits."""
        if view.status is QuestionStatus.WAITING:
            return None
        decision = view.decision
        if view.status is QuestionStatus.ANSWERED and decision is not None:
            if decision.approved:
                arguments = self.redaction.approved(approved_args(decision, self.shown))
                return Verdict(
                    view.status, arguments, by=decision.by, edited=decision.edited, standing=decision.standing
                )
            return Verdict(view.status, why=decision.reason or "", by=decision.by)
        if view.status is QuestionStatus.EXPIRED:
            return Verdict(view.status, why=f"not approved within {human(self.config.expires_in)}")
        if view.status is QuestionStatus.CANCELLED:
            by = f" by {view.cancelled_by}" if view.cancelled_by else ""
            return Verdict(view.status, why=f"the approval was cancelled{by}", by=view.cancelled_by or "")
        return Verdict(view.status, why=view.error or f"the approval was {view.status.value}")
