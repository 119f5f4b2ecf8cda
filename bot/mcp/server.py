"""The MCP server: the SDK's low-level `Server` answering `ask_human` and `get_answer`.

The low-level server is used rather than `MCPServer`'s decorators. Those derive a tool's schema
from a function's signature. But `ask_human`'s input schema is `workers.interaction.tools`'
`ask_user` schema, extended. It is published as it is.

Each call is a question-service call on behalf of a `Caller`. That is the stdio server's own
origin, or over HTTP, the bearer token's name. Some failures are a tool error (`is_error`), with
the problem in words. These are a bad argument, an unknown question, or a question Slack
refuses. So the model can correct its call, and nothing is asked. A call to a tool this server
lacks is a protocol error, not a tool result. That is JSON-RPC `-32602`, as the MCP spec lists
it.

Every tool is declared with its output schema (`bot.mcp.outputs.declare`). Every result is
checked against it before it is sent. Only `approve_tool_use` answers as one text block without
one, as Claude Code requires. `serverInfo.version` is the installed distribution's.

`approve_tool_use` is Claude Code's permission prompt (`bot.mcp.permission`). The rules file the
server is built with decides it (`bot.mcp.rules`), or a person in Slack. It answers allow or
deny. It is a tool error only for arguments that are not a permission prompt. A failing store
is a deny saying so.

A call cancelled before its result is sent withdraws the question it asked: its client never
got the question's id, so nobody is to answer it. That holds while the question is still being
created and posted, too. A call is cancelled by the client, by a session ended with DELETE, or
by a stdio host that exits. A stream that drops on a resumable session cancels nothing. Redis
down, full or failing over is a tool error saying so and when to try again, as `/api/v1`'s 503.
If Redis fails while a call waits on the question it asked, the error names that question. The
question stays open, and the model is told to call `get_answer` with it, not to ask again.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import mcp_types as types
import redis
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from bot.api.errors import RETRY_AFTER_OUTAGE, is_redis_trouble
from bot.mcp.gateway.deadlines import human
from bot.mcp.outputs import OutputCheck, declare
from bot.mcp.permission import (
    ANSWER_SCHEMA,
    APPROVE_TOOL_USE,
    APPROVE_TOOL_USE_DESCRIPTION,
    APPROVE_TOOL_USE_SCHEMA,
    approval_question,
    deny,
    parse_permission,
    reply,
    rules_answer,
)
from bot.mcp.rules import RulesConfig
from bot.mcp.tool_approval import ToolApproval
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
from workers.questions.exceptions import QuestionConflict, QuestionError
from workers.questions.models import QuestionView
from workers.questions.receipts import with_view_receipt
from workers.questions.waiting import Patience, Progress, WaitLost

log = Log("parley.mcp")
NAME = "parley"
DISTRIBUTION = "parley-slack"
INSTRUCTIONS = (
    "Ask people in Slack and wait for their answers: ask_human posts typed questions, request_approval asks "
    "to approve an action (its args editable), get_answer keeps waiting for one not answered within the call; "
    "approve_tool_use is Claude Code's permission prompt."
)
CallerOf = Callable[[ServerRequestContext[Any]], Caller]
UNAVAILABLE = f"Parley's Redis is unavailable; try again in {RETRY_AFTER_OUTAGE} s"
WAIT_LOST = (
    "Parley's Redis became unavailable while this call waited on question {id}. The question was asked "
    "and stays open; people may still answer it. Do not ask again: call get_answer with question_id "
    f'"{{id}}" once Redis is back (try again in {RETRY_AFTER_OUTAGE} s).'
)

TOOLS = [
    declare(ASK_HUMAN, ASK_HUMAN_DESCRIPTION, ASK_HUMAN_SCHEMA, RESULT_SCHEMA),
    declare(GET_ANSWER, GET_ANSWER_DESCRIPTION, GET_ANSWER_SCHEMA, RESULT_SCHEMA),
    declare(REQUEST_APPROVAL, REQUEST_APPROVAL_DESCRIPTION, REQUEST_APPROVAL_SCHEMA, RESULT_SCHEMA),
    # Claude Code reads a permission answer only as one text block: no outputSchema (bot.mcp.outputs).
    types.Tool(name=APPROVE_TOOL_USE, description=APPROVE_TOOL_USE_DESCRIPTION, input_schema=APPROVE_TOOL_USE_SCHEMA),
]
OUTPUTS = OutputCheck(TOOLS, text_only={APPROVE_TOOL_USE: ANSWER_SCHEMA})  # an undeclared tool fails here, at load


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _question_error(exc: QuestionError) -> str:
    errors = exc.extra.get("errors") or []
    lines = [f"{'.'.join(map(str, e.get('loc') or [])) or 'question'}: {e.get('msg')}" for e in errors]
    return exc.detail + ("".join(f"\n- {line}" for line in lines) if len(lines) > 1 else "")


class Tools:
    """The tool handlers, bound to one process's question service and rules file."""

    def __init__(self, service: QuestionService, caller_of: CallerOf, rules: RulesConfig | None = None) -> None:
        self.service = service
        self.caller_of = caller_of
        self.rules = rules or RulesConfig()

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
            elif params.name == APPROVE_TOOL_USE:
                result = await self.approve_tool_use(caller, args, ctx.session.report_progress)
            else:  # listed in TOOLS without a branch here: the server's bug, not the caller's mistake
                raise MCPError(code=INTERNAL_ERROR, message=f"tool {params.name!r} is listed but not served")
        except ToolInputError as exc:
            return _error(str(exc))
        except WaitLost as exc:
            if not is_redis_trouble(exc.error):
                raise
            log.warning(
                "Redis unavailable while waiting; the question stays open",
                run_id=exc.question_id,
                tool=params.name,
                origin=caller.name,
                error=str(exc.error),
            )
            if params.name != APPROVE_TOOL_USE:
                return _error(WAIT_LOST.format(id=exc.question_id))
            result = deny(UNAVAILABLE)
        except QuestionError as exc:
            log.info("tool refused", tool=params.name, origin=caller.name, error=exc.detail)
            return _error(_question_error(exc))
        except redis.RedisError as exc:
            if not is_redis_trouble(exc):
                raise
            log.warning("Redis unavailable; tool call refused", tool=params.name, origin=caller.name, error=str(exc))
            if params.name != APPROVE_TOOL_USE:
                return _error(UNAVAILABLE)
            result = deny(UNAVAILABLE)
        return OUTPUTS.result(params.name, result)

    def _asking(self, caller: Caller, wait: float) -> Patience:
        """Wait at most `wait` seconds; a call cancelled meanwhile withdraws its question.

        Its client never got the question's id, so nobody could read the answer.
        """

        async def gone(question_id: str) -> None:
            view = await self.service.waiting.withdraw(caller, question_id)
            log.info("question withdrawn: its call was cancelled", run_id=question_id, status=view.status.value)

        return Patience(seconds=wait, when_gone=gone)

    async def ask_human(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        body, wait = parse_ask_human(args, caller.name)
        patience = self._asking(caller, wait)
        view, _ = await self.service.waiting.ask(caller, body, patience)
        return await self._result(caller, view, patience)

    async def request_approval(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        body, wait = await self.service.in_thread(lambda: parse_request_approval(args))  # its schema is checked
        patience = self._asking(caller, wait)
        view, _ = await self.service.waiting.ask(caller, body, patience)
        return await self._result(caller, view, patience)

    async def _result(self, caller: Caller, asked: QuestionView, patience: Patience) -> dict[str, Any]:
        """The result naming the question; a call cancelled meanwhile withdraws it.

        Without Redis a closed question comes without its receipt, not as an error.
        """
        view = asked
        try:
            view = await self.service.in_thread(lambda: with_view_receipt(self.service, asked))
        except redis.RedisError as exc:  # a later get_answer carries the receipt
            if not is_redis_trouble(exc):
                raise
            log.warning("receipt not read: Redis unavailable", run_id=asked.id, origin=caller.name, error=str(exc))
        await self.service.waiting.kept(caller, view, patience)
        return tool_result(view)

    async def approve_tool_use(
        self, caller: Caller, args: dict[str, Any], progress: Progress | None = None
    ) -> dict[str, Any]:
        """Claude Code's permission prompt: the rules file's answer, or a Slack person's decision.

        The call waits as every MCP wait does (`workers.questions.waiting`). It sends progress every 15
        s, so a client resetting its timeout on progress keeps waiting. It waits at most the expiry and
        its grace. A client that gives up withdraws the approval. A second call with the same
        `tool_use_id` and caller asks nobody again. It joins the first call's approval and gets the same
        answer.
        """
        name, given, use_id = parse_permission(args)
        answer = rules_answer(self.rules, name, given)
        if answer is not None:
            log.info("tool use decided by the rules", tool=name, behavior=answer["behavior"], origin=caller.name)
            return answer
        approval = ToolApproval(given, self.rules.rule_for(name).redact, self.rules)
        try:
            body = approval_question(approval, name, use_id)
        except ValueError as exc:  # input too deep or too large to show: never allowed unseen
            return deny(f"{name} cannot be put for approval: {exc}")
        key = f"{APPROVE_TOOL_USE}:{use_id}" if use_id else None  # a repeated tool use joins its first question
        expires_in = self.rules.expires_in
        patience = Patience.decision(expires_in, progress, "waiting for a person to approve in Slack", total=True)
        try:
            view, _ = await self.service.waiting.ask(caller, body, patience, key)
        except QuestionConflict:
            log.warning("tool use approval refused: id reused", tool=name, origin=caller.name, tool_use_id=use_id)
            return deny(f"tool_use_id {use_id!r} was asked about already, with another input")
        except QuestionError as exc:
            log.warning("tool use approval not asked", tool=name, origin=caller.name, error=exc.detail)
            return deny(f"the approval could not be asked: {_question_error(exc)}")
        decided = reply(approval.verdict(view)) or deny(f"not approved within {human(expires_in)}")
        log.info("tool use decided", run_id=view.id, tool=name, behavior=decided["behavior"], origin=caller.name)
        return decided

    async def get_answer(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        qid, wait = parse_get_answer(args)
        view = await self.service.waiting.until(caller, qid, Patience.within(wait))
        return tool_result(await self.service.in_thread(lambda: with_view_receipt(self.service, view)))


def build_server(service: QuestionService, caller_of: CallerOf, rules: RulesConfig | None = None) -> Server[Any]:
    """One process's MCP server, run over stdio (`parley mcp`) or mounted over HTTP.

    HTTP mounting is in `bot.mcp.http`. `rules`: the rules file `approve_tool_use` follows. None
    asks about every tool use, in no channel, so all are denied.
    """
    tools = Tools(service, caller_of, rules)
    return Server(
        NAME,
        version=version(DISTRIBUTION),
        instructions=INSTRUCTIONS,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
    )
