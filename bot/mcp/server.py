"""The MCP server: the SDK's low-level `Server` answering `ask_human` and `get_answer`.

The low-level server is used (rather than `MCPServer`'s decorators, which derive a tool's
schema from a function's signature) because `ask_human`'s input schema is the `ask_user`
schema from `workers.interaction.tools`, extended, and is published as it is.

Each call is a question-service call on behalf of a `Caller`: the stdio server's own
origin, or, over HTTP, the bearer token's name. A bad argument, an unknown question or a
question Slack refuses is a tool error (`is_error`), with the problem in words, so the
model can correct its call; nothing is asked. A call to a tool this server does not have is
a protocol error (JSON-RPC `-32602`, as the MCP spec lists it), not a tool result.

Every tool is declared with its output schema (`bot.mcp.outputs.declare`), and every result
is checked against it before it is sent. `serverInfo.version` is the installed distribution's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from bot.mcp.outputs import OutputCheck, declare
from bot.mcp.tools import (
    ASK_HUMAN,
    ASK_HUMAN_DESCRIPTION,
    ASK_HUMAN_SCHEMA,
    GET_ANSWER,
    GET_ANSWER_DESCRIPTION,
    GET_ANSWER_SCHEMA,
    REQUEST_APPROVAL,
    REQUEST_APPROVAL_DESCRIPTION,
    REQUEST_APPROVAL_SCHEMA,
    RESULT_SCHEMA,
    ToolInputError,
    parse_ask_human,
    parse_get_answer,
    parse_request_approval,
    tool_result,
)
from workers.logs import Log
from workers.questions import Caller, QuestionService
from workers.questions.exceptions import QuestionError
from workers.store.closings import Closings

log = Log("parley.mcp")
NAME = "parley"
DISTRIBUTION = "parley-slack"
INSTRUCTIONS = (
    "Ask people in Slack and wait for their answers: ask_human posts typed questions, request_approval asks "
    "to approve an action (its args editable), get_answer keeps waiting for one not answered within the call."
)
CallerOf = Callable[[ServerRequestContext[Any]], Caller]

TOOLS = [
    declare(ASK_HUMAN, ASK_HUMAN_DESCRIPTION, ASK_HUMAN_SCHEMA, RESULT_SCHEMA),
    declare(GET_ANSWER, GET_ANSWER_DESCRIPTION, GET_ANSWER_SCHEMA, RESULT_SCHEMA),
    declare(REQUEST_APPROVAL, REQUEST_APPROVAL_DESCRIPTION, REQUEST_APPROVAL_SCHEMA, RESULT_SCHEMA),
]
OUTPUTS = OutputCheck(TOOLS)  # a tool declared without an output schema fails here, when the module loads


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _question_error(exc: QuestionError) -> str:
    errors = exc.extra.get("errors") or []
    lines = [f"{'.'.join(map(str, e.get('loc') or [])) or 'question'}: {e.get('msg')}" for e in errors]
    return exc.detail + ("".join(f"\n- {line}" for line in lines) if len(lines) > 1 else "")


class Tools:
    """The tool handlers, bound to one process's question service and close notifications."""

    def __init__(self, service: QuestionService, closings: Closings, caller_of: CallerOf) -> None:
        self.service = service
        self.closings = closings
        self.caller_of = caller_of

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in OUTPUTS:
            known = ", ".join(t.name for t in TOOLS)
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name!r}; this server has {known}")
        caller = self.caller_of(ctx)
        args = params.arguments or {}
        try:
            if params.name == ASK_HUMAN:
                result = await self.ask_human(caller, args)
            elif params.name == GET_ANSWER:
                result = await self.get_answer(caller, args)
            elif params.name == REQUEST_APPROVAL:
                result = await self.request_approval(caller, args)
            else:  # listed in TOOLS without a branch here: the server's bug, not the caller's mistake
                raise MCPError(code=INTERNAL_ERROR, message=f"tool {params.name!r} is listed but not served")
        except ToolInputError as exc:
            return _error(str(exc))
        except QuestionError as exc:
            log.info("tool refused", tool=params.name, origin=caller.name, error=exc.detail)
            return _error(_question_error(exc))
        OUTPUTS.check(params.name, result)
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(result))], structured_content=result)

    async def ask_human(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        body, wait = parse_ask_human(args, caller.name)
        view, _ = await self.service.in_thread(lambda: self.service.create(caller, body))
        log.info("asked over MCP", run_id=view.id, origin=caller.name, channel=view.channel or "")
        if wait > 0:
            view = await self.service.wait(caller, view.id, wait, self.closings)
        return tool_result(view)

    async def request_approval(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        body, wait = parse_request_approval(args)
        view, _ = await self.service.in_thread(lambda: self.service.create(caller, body))
        log.info("approval asked over MCP", run_id=view.id, origin=caller.name, channel=view.channel or "")
        if wait > 0:
            view = await self.service.wait(caller, view.id, wait, self.closings)
        return tool_result(view)

    async def get_answer(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        qid, wait = parse_get_answer(args)
        return tool_result(await self.service.wait(caller, qid, wait, self.closings))


def build_server(service: QuestionService, closings: Closings, caller_of: CallerOf) -> Server[Any]:
    """The MCP server of one process; run it over stdio (`parley mcp`) or mount it over HTTP (`bot.mcp.http`)."""
    tools = Tools(service, closings, caller_of)
    return Server(
        NAME,
        version=version(DISTRIBUTION),
        instructions=INSTRUCTIONS,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
    )
