"""What the MCP gateway records, through the question service, of calls it asked about.

A call approved in Slack is forwarded upstream by the step that claims it first (`claim`). So it
is forwarded at most once. A call whose client went away is claimed as such before anyone can
forward it. A standing approval lets one MCP session call one tool without asking, for a while.
Each step is written into the history of the question's run, for Inspect and the audit. The
gateway reaches Redis only through here and the service, never the store itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workers.store.gateway import CLIENT_GONE, FORWARDED, GatewayStore

if TYPE_CHECKING:
    from workers.questions.service import QuestionService

__all__ = ["CLIENT_GONE", "FORWARDED", "Forwarding"]


class Forwarding:
    """The gateway's claims, standing approvals and history notes.

    Each call is a short store step, off the event loop.
    """

    def __init__(self, service: QuestionService) -> None:
        self.service = service
        self.store = GatewayStore(service.runtime.redis)

    async def claim(self, question_id: str, outcome: str) -> str | None:
        """Record `outcome` for the call asked as `question_id`, unless one is recorded.

        Outcomes are `FORWARDED` and `CLIENT_GONE`. Returns None when this call won. Otherwise it
        returns the earlier outcome, which stands.
        """
        return await self.service.in_thread(lambda: self.store.claim(question_id, outcome))

    async def standing(self, session: str, tool: str) -> str | None:
        """The run whose standing approval lets `session` call `tool` now, or None."""
        return await self.service.in_thread(lambda: self.store.standing(session, tool))

    async def grant_standing(self, session: str, tool: str, run_id: str, seconds: int) -> None:
        """Let `session` call `tool` unasked for `seconds`, on run `run_id`'s approval."""
        await self.service.in_thread(lambda: self.store.grant_standing(session, tool, run_id, seconds))

    async def note(self, run_id: str, event: str, by: str = "", **detail: Any) -> None:
        """Add `event` to the history of the run asked as `run_id`."""
        store = self.service.runtime.store
        await self.service.in_thread(lambda: store.add_history(run_id, event, by, **detail))
