"""An `ask` rule's tool call: put to people in Slack as an approval, forwarded upstream once if approved.

The approval is an ordinary approval question (`QuestionService`, `run.approve`'s `Request`), so
it is a Parley run with its history, in `parley runs list`, Inspect and the App Home. It shows
the tool, its description and the arguments, with the rule's `redact` paths as "••••" and never
editable: what is forwarded is the approved arguments with the redacted values put back from
the call, which this process alone holds (they never reach Slack or Redis). A redacted value is
also removed by value (`bot.mcp.scrub`) from the other arguments shown, the history, and the
upstream's result or error, so an upstream that echoes it shows it to nobody.

Forwarding is claimed first (`GatewayStore.claim`), so a call is forwarded at most once; a call
whose client went away while it waited is claimed as such, and the decision that comes later is
recorded in the run's history as not forwarded. A standing approval (`allow_standing`) lets later
calls of the same tool from the same MCP session go without asking, each recorded in the history
of the run that granted it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
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
from workers.interaction import ContextError, FormError
from workers.interaction.approval import approval_request
from workers.interaction.lengths import REASON_MAX
from workers.logs import Log
from workers.questions import Caller, QuestionService
from workers.questions.exceptions import QuestionError
from workers.questions.models import QuestionCreate, QuestionStatus, QuestionView
from workers.questions.receipt_views import receipt_meta
from workers.store.closings import Closings
from workers.store.gateway import CLIENT_GONE, FORWARDED, GatewayStore

log = Log("parley.mcp.gateway")
PROGRESS_EVERY = 15.0
"""Seconds between progress notifications while a call waits for its approval."""
STANDING_FOR = 3600
STANDING = "Approve this tool for this session for 1 hour"
Report = Callable[[float, str], Awaitable[None]]


def error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


@dataclass(frozen=True)
class Call:
    """One tool call to the gateway: the upstream tool, its arguments, its rule and who calls from where."""

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
        closings: Closings,
        upstreams: Upstreams,
        config: RulesConfig,
        *,
        progress_every: float = PROGRESS_EVERY,
    ) -> None:
        self.service = service
        self.closings = closings
        self.upstreams = upstreams
        self.config = config
        self.progress_every = progress_every
        self.gateway = GatewayStore(service.runtime.redis)
        self._watchers: set[asyncio.Task[None]] = set()

    async def ask(self, call: Call, report: Report) -> types.CallToolResult:
        """The upstream's result once the call is approved; a tool error when it is not, saying why."""
        name = call.target.full_name
        if call.rule.allow_standing:
            granted = await self.service.in_thread(lambda: self.gateway.standing(call.session, name))
            if granted:
                await self._history(granted, "approved by the standing rule", tool=name, args=call.shown)
                return await self._forward(call, call.arguments, granted)
        try:
            body = self._question(call)
            view, _ = await self.service.in_thread(lambda: self.service.create(call.caller, body))
        except (FormError, ContextError, ValueError) as exc:
            return error(f"{name} cannot be put to approval: {exc}")
        except QuestionError as exc:
            return error(f"{name} cannot be put to approval: {exc.detail}")
        log.info("tool call put to approval", run_id=view.id, tool=name, origin=call.caller.name)
        try:
            view = await self._wait(view.id, call, report)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._client_gone(call, view.id)
            raise
        return await self._decided(call, view)

    def _question(self, call: Call) -> QuestionCreate:
        if self.config.channel is None:
            raise ValueError("the rules file names no `channel` to ask in")
        tool = call.target.tool
        shown = call.shown
        editable = call.redaction.editable  # nothing redacted in it
        about = f"{call.caller.name} asks to call {call.target.full_name}"
        reason = f"{about}: {tool.description}" if tool.description else about
        reason = reason if tool.name.isascii() else f"{note(tool.name)} {reason}"
        options: dict[str, Any] = {
            "editable": editable,
            "standing": STANDING if call.rule.allow_standing else None,
            "reason": call.redaction.scrubber.text(reason)[:REASON_MAX],
            "assignees": list(self.config.assignees),
            "expires_in": self.config.expires_in,
        }
        action = f"Call {call.target.full_name}"
        try:
            request = approval_request(action, shown, schema=dict(tool.input_schema), **options)
        except FormError:  # a schema Parley's items do not cover: the values' types decide
            request = approval_request(action, shown, input_schema=dict(tool.input_schema), **options)
        return QuestionCreate(request=request, channel=self.config.channel, context=shown)

    async def _wait(self, qid: str, call: Call, report: Report) -> QuestionView:
        waited = 0.0
        while True:
            view = await self.service.wait(call.caller, qid, self.progress_every, self.closings)
            if view.status is not QuestionStatus.WAITING:
                return view
            waited += self.progress_every
            await report(waited, f"waiting for approval of {call.target.full_name} in Slack")

    async def _decided(self, call: Call, view: QuestionView) -> types.CallToolResult:
        name = call.target.full_name
        decision = view.decision
        if view.status is QuestionStatus.EXPIRED:
            return error(f"{name} was not approved within {human(self.config.expires_in)}")
        if view.status is not QuestionStatus.ANSWERED or decision is None:
            why = view.error or f"the approval was {view.status.value}"
            return error(f"{name} was not approved: {why}")
        if not decision.approved:
            said = f": {decision.reason}" if decision.reason else ""
            return error(f"{name} was rejected by {decision.by or 'the approver'}{said}")
        arguments = call.redaction.approved(decision.args)
        before = await self.service.in_thread(lambda: self.gateway.claim(view.id, FORWARDED))
        if before is not None:
            return error(f"{name} was approved, and not forwarded again: {before}")
        if decision.standing and call.rule.allow_standing:
            await self.service.in_thread(lambda: self.gateway.grant_standing(call.session, name, view.id, STANDING_FOR))
            await self._history(view.id, "standing approval granted", decision.by, tool=name, seconds=STANDING_FOR)
        meta = await self.service.in_thread(lambda: receipt_meta(self.service.runtime.receipts, view.id))
        return await self._forward(call, arguments, view.id, by=decision.by, edited=decision.edited, meta=meta)

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
        await self._history(run_id, "forwarded", by, tool=name, args=forwarded.shown, edited=edited)
        try:
            result = forwarded.scrubber.result(await self.upstreams.call(call.target, arguments, meta))
        except GatewayError as exc:
            why = forwarded.scrubber.text(str(exc))
            await self._history(run_id, "upstream failed", tool=name, error=why)
            return error(why)
        await self._history(run_id, "upstream answered", tool=name, is_error=bool(result.is_error))
        log.info("tool call forwarded", run_id=run_id, tool=name, by=by, is_error=bool(result.is_error))
        return result

    async def _refused(self, call: Call, arguments: dict[str, Any], run_id: str, by: str) -> str | None:
        """Why the approved call may not be forwarded now (its tool changed, or its arguments do not fit)."""
        name = call.target.full_name
        changed = still_the_same(self.upstreams, call.target)
        if changed is not None:
            await self._history(run_id, "not forwarded", by, tool=name, detail=changed)
            log.warning("approved call not forwarded: its tool changed", run_id=run_id, tool=name)
            return changed
        why = await arguments_refused_off_loop(call.target, arguments)
        if why is not None:
            fields = await anyio.to_thread.run_sync(fields_refused, call.target, arguments)
            await self._history(run_id, "not forwarded", by, tool=name, detail="the input schema refused", at=fields)
            log.warning("approved call not forwarded: its arguments", run_id=run_id, tool=name, at=fields)
            return why
        return None

    async def _client_gone(self, call: Call, qid: str) -> None:
        """The call was cancelled, or its session closed, while it waited: it is never forwarded now."""
        before = await self.service.in_thread(lambda: self.gateway.claim(qid, CLIENT_GONE))
        if before is not None:
            return
        name = call.target.full_name
        await self._history(qid, "client went away", tool=name, detail="the call will not be forwarded")
        log.info("client went away while its call waited for approval", run_id=qid, tool=name)
        task = asyncio.get_running_loop().create_task(self._record_late_decision(call, qid))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _record_late_decision(self, call: Call, qid: str) -> None:
        """Wait for the decision on a call whose client went away, and record it as not forwarded."""
        deadline = anyio.current_time() + self.config.expires_in + 120
        try:
            view = await self.service.wait(call.caller, qid, 0, self.closings)
            while view.status is QuestionStatus.WAITING and anyio.current_time() < deadline:
                view = await self.service.wait(call.caller, qid, 60, self.closings)
            if view.decision is not None:
                verdict = "approved" if view.decision.approved else "rejected"
                await self._history(
                    qid,
                    "not forwarded",
                    view.decision.by,
                    tool=call.target.full_name,
                    decision=verdict,
                    detail="the call's client had gone away",
                )
        except Exception as exc:  # a watcher of history only: its failure changes nothing else
            log.warning("could not record the late decision", run_id=qid, error=repr(exc))

    async def _history(self, run_id: str, event: str, by: str = "", **detail: Any) -> None:
        store = self.service.runtime.store
        await self.service.in_thread(lambda: store.add_history(run_id, event, by, **detail))
