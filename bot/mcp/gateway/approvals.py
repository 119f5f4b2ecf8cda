"""An `ask` rule's tool call: approved by people in Slack, then forwarded upstream once.

The approval is an ordinary approval question: `QuestionService`, with `run.approve`'s
`Request`. So it is a Parley run with its history, in `parley runs list`, Inspect and the App
Home. It shows the tool, its description and the arguments. The rule's `redact` paths show as
"••••", never editable. What is forwarded is the approved arguments, with the redacted values
put back from the call. Only this process holds those, and they never reach Slack or Redis. A
redacted value is also removed by value (`bot.mcp.scrub`) elsewhere. That covers the other
arguments shown, the history, and the upstream's result or error. So an upstream that echoes it
shows it to nobody.

Forwarding is claimed first (`workers.questions.forwarding`), so a call is forwarded at most
once. A call whose client went away while waiting is claimed as such. The later decision is
recorded in the run's history as not forwarded. A standing approval (`allow_standing`) lets
later calls of the same tool, from the same MCP session, go unasked. Each is recorded in the
history of the run that granted it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types

from bot.mcp.gateway.checks import arguments_refused_off_loop, fields_refused, still_the_same
from bot.mcp.gateway.deadlines import human
from bot.mcp.gateway.names import note
from bot.mcp.gateway.upstreams import GatewayError, Target, Upstreams
from bot.mcp.rules import Rule, RulesConfig
from bot.mcp.scrub import Redaction
from bot.mcp.tool_approval import ToolApproval, Verdict
from workers.interaction.lengths import REASON_MAX
from workers.logs import Log
from workers.questions import Caller, QuestionService
from workers.questions.exceptions import QuestionError
from workers.questions.forwarding import CLIENT_GONE, FORWARDED, Forwarding
from workers.questions.models import QuestionCreate, QuestionStatus
from workers.questions.receipt_views import receipt_meta
from workers.questions.waiting import PROGRESS_EVERY, Patience, Progress

log = Log("parley.mcp.gateway")
STANDING_FOR = 3600
STANDING = f"Approve this tool for this session for {human(STANDING_FOR)}"


def error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


@dataclass(frozen=True)
class Call:
    """One tool call to the gateway: upstream tool, arguments, rule, and its caller."""

    target: Target
    arguments: dict[str, Any]
    rule: Rule
    caller: Caller
    session: str

    @cached_property
    def redaction(self) -> Redaction:
        return Redaction(self.arguments, self.rule.redact)

    @property
    def shown(self) -> dict[str, Any]:
        return self.redaction.shown


class Approvals:
    def __init__(
        self,
        service: QuestionService,
        upstreams: Upstreams,
        config: RulesConfig,
        *,
        progress_every: float = PROGRESS_EVERY,
    ) -> None:
        self.service = service
        self.upstreams = upstreams
        self.config = config
        self.progress_every = progress_every
        self.forwarding = Forwarding(service)
        self._watchers: set[asyncio.Task[None]] = set()

    async def ask(self, call: Call, progress: Progress | None) -> types.CallToolResult:
        """The upstream's result once the call is approved, else a tool error saying why.

        It waits as every MCP wait does (`workers.questions.waiting`). A client that goes away leaves
        the question open. Its decision is recorded as not forwarded.
        """
        name = call.target.full_name
        if call.rule.allow_standing:
            granted = await self.forwarding.standing(call.session, name)
            if granted:
                await self.forwarding.note(granted, "approved by the standing rule", tool=name, args=call.shown)
                return await self._forward(call, call.arguments, granted)
        approval = ToolApproval(call.arguments, call.rule.redact, self.config)
        try:
            body = self._question(call, approval)
        except ValueError as exc:
            return error(f"{name} cannot be put to approval: {exc}")
        saying = f"waiting for approval of {name} in Slack"
        patience = Patience.decision(
            self.config.expires_in,
            progress,
            saying,
            every=self.progress_every,
            when_gone=lambda qid: self._client_gone(call, qid),
        )
        try:
            view, _ = await self.service.waiting.ask(call.caller, body, patience)
        except QuestionError as exc:
            return error(f"{name} cannot be put to approval: {exc.detail}")
        return await self._decided(call, view.id, approval.verdict(view))

    @staticmethod
    def _question(call: Call, approval: ToolApproval) -> QuestionCreate:
        tool = call.target.tool
        about = f"{call.caller.name} asks to call {call.target.full_name}"
        reason = f"{about}: {tool.description}" if tool.description else about
        reason = reason if tool.name.isascii() else f"{note(tool.name)} {reason}"
        return approval.question(
            f"Call {call.target.full_name}",
            reason=approval.redaction.scrubber.text(reason)[:REASON_MAX],
            schema=dict(tool.input_schema),
            standing=STANDING if call.rule.allow_standing else None,
        )

    async def _decided(self, call: Call, run_id: str, verdict: Verdict | None) -> types.CallToolResult:
        name = call.target.full_name
        if verdict is None:  # still waiting past the grace period, and not withdrawn
            return error(f"{name} was not approved within {human(self.config.expires_in)}")
        if verdict.rejected:
            said = f": {verdict.why}" if verdict.why else ""
            return error(f"{name} was rejected by {verdict.by or 'the approver'}{said}")
        if verdict.arguments is None and verdict.status is QuestionStatus.EXPIRED:
            return error(f"{name} was {verdict.why}")  # "not approved within 15 minutes"
        if verdict.arguments is None:
            return error(f"{name} was not approved: {verdict.why}")
        before = await self.forwarding.claim(run_id, FORWARDED)
        if before is not None:
            return error(f"{name} was approved, and not forwarded again: {before}")
        if verdict.standing and call.rule.allow_standing:
            await self.forwarding.grant_standing(call.session, name, run_id, STANDING_FOR)
            granted = "standing approval granted"
            await self.forwarding.note(run_id, granted, verdict.by, tool=name, seconds=STANDING_FOR)
        meta = await self.service.in_thread(lambda: receipt_meta(self.service.runtime.receipts, run_id))
        return await self._forward(call, verdict.arguments, run_id, by=verdict.by, edited=verdict.edited, meta=meta)

    async def _forward(
        self,
        call: Call,
        arguments: dict[str, Any],
        run_id: str,
        *,
        by: str = "",
        edited: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> types.CallToolResult:
        name = call.target.full_name
        forwarded = Redaction(arguments, call.rule.redact)
        refused = await self._refused(call, arguments, run_id, by)
        if refused is not None:
            return error(forwarded.scrubber.text(refused))
        await self.forwarding.note(run_id, "forwarded", by, tool=name, args=forwarded.shown, edited=edited)
        try:
            result = forwarded.scrubber.result(await self.upstreams.call(call.target, arguments, meta))
        except GatewayError as exc:
            why = forwarded.scrubber.text(str(exc))
            await self.forwarding.note(run_id, "upstream failed", tool=name, error=why)
            return error(why)
        await self.forwarding.note(run_id, "upstream answered", tool=name, is_error=bool(result.is_error))
        log.info("tool call forwarded", run_id=run_id, tool=name, by=by, is_error=bool(result.is_error))
        return result

    async def _refused(self, call: Call, arguments: dict[str, Any], run_id: str, by: str) -> str | None:
        """Why the approved call may not be forwarded now.

        Its tool changed, or its arguments do not fit.
        """
        name = call.target.full_name
        changed = still_the_same(self.upstreams, call.target)
        if changed is not None:
            await self.forwarding.note(run_id, "not forwarded", by, tool=name, detail=changed)
            log.warning("approved call not forwarded: its tool changed", run_id=run_id, tool=name)
            return changed
        why = await arguments_refused_off_loop(call.target, arguments)
        if why is not None:
            fields = await anyio.to_thread.run_sync(fields_refused, call.target, arguments)
            await self.forwarding.note(
                run_id, "not forwarded", by, tool=name, detail="the input schema refused", at=fields
            )
            log.warning("approved call not forwarded: its arguments", run_id=run_id, tool=name, at=fields)
            return why
        return None

    async def _client_gone(self, call: Call, qid: str) -> None:
        """The call was cancelled, or its session closed, while waiting.

        It is never forwarded now.
        """
        before = await self.forwarding.claim(qid, CLIENT_GONE)
        if before is not None:
            return
        name = call.target.full_name
        await self.forwarding.note(qid, "client went away", tool=name, detail="the call will not be forwarded")
        log.info("client went away while its call waited for approval", run_id=qid, tool=name)
        task = asyncio.get_running_loop().create_task(self._record_late_decision(call, qid))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _record_late_decision(self, call: Call, qid: str) -> None:
        """Await the decision on a call whose client left, recording it as not forwarded."""
        try:
            view = await self.service.waiting.until(call.caller, qid, Patience.within(self.config.expires_in + 120))
            if view.decision is not None:
                verdict = "approved" if view.decision.approved else "rejected"
                await self.forwarding.note(
                    qid,
                    "not forwarded",
                    view.decision.by,
                    tool=call.target.full_name,
                    decision=verdict,
                    detail="the call's client had gone away",
                )
        except Exception as exc:  # a watcher of history only: its failure changes nothing else
            log.warning("could not record the late decision", run_id=qid, error=repr(exc))
