"""The gateway's MCP server: lists the upstreams' tools and routes each call by its rule.

`allow` forwards the call. `deny` is a tool error carrying the rule's reason. `ask` waits for an
approval in Slack (`approvals`). A call to a name with no listed tool is JSON-RPC invalid params
(-32602). That is as the spec and `/mcp` have it. A call to an unreachable upstream is a tool
error saying so. Either way nothing is asked or forwarded. A rule's redacted values are removed
from whatever comes back. They are also removed from the upstream's elicitations while the call
runs (`bot.mcp.scrub`, `echoes`). `serverInfo.version` is Parley's own.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from bot.mcp.gateway.approvals import Approvals, Call, error
from bot.mcp.gateway.checks import arguments_refused_off_loop
from bot.mcp.gateway.echoes import InFlight
from bot.mcp.gateway.elicitations import Asking, Elicitations
from bot.mcp.gateway.upstreams import GatewayError, UnknownTool, Upstreams
from bot.mcp.rules import RuleAction, RulesConfig
from bot.mcp.scrub import Scrubber
from bot.mcp.server import DISTRIBUTION, CallerOf
from workers.logs import Log
from workers.questions import QuestionService
from workers.questions.waiting import PROGRESS_EVERY

log = Log("parley.mcp.gateway")
NAME = "parley-gateway"
INSTRUCTIONS = (
    "The tools of other MCP servers, behind Parley's rules: some calls go straight through, some are refused, "
    "and some wait for a person to approve them in Slack (the arguments may be edited first)."
)
SessionOf = Callable[[ServerRequestContext[Any]], str]


class GatewayTools:
    def __init__(
        self,
        upstreams: Upstreams,
        approvals: Approvals,
        elicitations: Elicitations,
        caller_of: CallerOf,
        session_of: SessionOf,
        in_flight: InFlight,
    ) -> None:
        self.upstreams = upstreams
        self.approvals = approvals
        self.elicitations = elicitations
        self.config: RulesConfig = upstreams.config
        self.caller_of = caller_of
        self.session_of = session_of
        self.in_flight = in_flight

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.upstreams.listed())

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = dict(params.arguments or {})
        try:
            target = self.upstreams.resolve(params.name)
        except UnknownTool as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from exc
        except GatewayError as exc:
            return error(str(exc))
        rule = self.config.rule_for(target.full_name)
        caller = self.caller_of(ctx)
        if rule.action is RuleAction.DENY:
            log.info("tool call denied", tool=target.full_name, origin=caller.name)
            return error(f"{target.full_name} is denied: {rule.reason or 'the gateway rules deny it'}")
        scrubber = Scrubber.of(args, rule.redact)
        refused = await arguments_refused_off_loop(target, args) if rule.action is RuleAction.ASK else None
        if refused is not None:  # nobody is asked to approve a call the tool, as it is now, refuses
            log.info("tool call refused by its input schema", tool=target.full_name, origin=caller.name)
            return error(scrubber.text(refused))
        progress = ctx.session.report_progress
        try:
            with self.in_flight.calling(target.upstream, scrubber):
                async with self.elicitations.calling(Asking(target.upstream, target.full_name, caller, progress)):
                    if rule.action is RuleAction.ALLOW:
                        return scrubber.result(await self.upstreams.call(target, args))
                    call = Call(target, args, rule, caller, self.session_of(ctx))
                    return scrubber.result(await self.approvals.ask(call, progress))
        except GatewayError as exc:
            return error(scrubber.text(str(exc)))


def build_gateway(
    service: QuestionService,
    upstreams: Upstreams,
    caller_of: CallerOf,
    session_of: SessionOf,
    *,
    progress_every: float = PROGRESS_EVERY,
) -> Server[Any]:
    """The gateway's MCP server over open `upstreams`.

    Run it over stdio, or mount it over HTTP.
    """
    approvals = Approvals(service, upstreams, upstreams.config, progress_every=progress_every)
    elicitations = Elicitations(service, upstreams.config, progress_every=progress_every)
    in_flight = InFlight()
    upstreams.elicit = in_flight.guarding(elicitations.answer)  # an upstream's elicitation is asked in Slack
    tools = GatewayTools(upstreams, approvals, elicitations, caller_of, session_of, in_flight)
    return Server(
        NAME,
        version=version(DISTRIBUTION),
        instructions=INSTRUCTIONS,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
    )
