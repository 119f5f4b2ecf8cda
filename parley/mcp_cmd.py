"""`parley mcp`: Parley's MCP tools over stdio, for desktop and coding hosts.

Like the other CLI commands, it acts with the machine's own configuration and needs no token.
That means `REDIS_URL` and the Slack settings. Its questions are attributed to the origin
`PARLEY_MCP_ORIGIN`, by default `mcp`. They belong to `mcp:<origin>`, and only it reads them. An
API token of the same name is someone else. It posts a question itself: the first execution of
its run, as `parley serve` does for the API. The answer arrives at `parley serve` from Slack.
This process learns of it from the store's close notification. A `parley worker` carries the run
on after the answer, as for any question.

`--config rules.yml` is the rules file `approve_tool_use` follows (`bot.mcp.rules`). It is read
once at start-up, with `${NAME}`s from the environment. A file that cannot be used stops the
command, saying why.

stdout is the MCP channel. Logs go to stderr (`workers.logs`), and nothing else prints.
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO

import anyio
from mcp.server.stdio import stdio_server
from mcp.types import INTERNAL_ERROR, ErrorData, JSONRPCError

from bot.mcp.rules import RulesConfig, load_config
from bot.mcp.server import build_server
from bot.slack.channel_names import SlackChannelNames
from parley.bootstrap import build_runtime, connect_redis, question_config
from parley.installs import web_clients
from parley.serve import async_redis
from parley.settings import Settings
from parley.worker import add_api_host
from workers.logs import Log
from workers.questions import Caller, QuestionService
from workers.questions.waiting import listening
from workers.runs import Closings

log = Log("parley.mcp")


def build_service(settings: Settings) -> QuestionService:
    """The question service of a `parley mcp` process, with its own close notifications."""
    if not settings.oauth_mode:
        settings.require("slack_bot_token")
    client = connect_redis(settings)
    runtime = build_runtime(settings, client)
    clients = web_clients(settings, client)
    config = question_config(settings)
    add_api_host(runtime, clients)  # as `parley serve` and the workers post
    closings = Closings(async_redis(settings, client))
    return QuestionService(runtime, config, channels=SlackChannelNames(clients), closings=closings)


async def serve_stdio(service: QuestionService, origin: str, rules: RulesConfig | None = None) -> None:
    caller = Caller(origin, via="mcp")
    server = build_server(service, lambda ctx: caller, rules)
    async with listening(service), stdio_server() as (read_stream, write_stream):
        log.info("serving MCP over stdio", origin=origin)
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_mcp(settings: Settings, config: str | None = None) -> int:
    rules = load_config(config, os.environ) if config else None  # before anything connects: a bad file says so
    anyio.run(serve_stdio, build_service(settings), settings.parley_mcp_origin, rules)
    return 0


def refuse_on_stdio(message: str, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
    """Answer each MCP request on stdio with an error saying `message`.

    The host's `initialize` comes first. This goes on until the host closes stdin. A host shows that
    error, where a process that just exits shows "Connection closed". Nothing is read from a
    terminal. A person who ran `parley mcp` by hand has the stderr line already.
    """
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    try:
        if stdin.isatty():
            return
        for line in iter(stdin.readline, b""):
            try:
                request = json.loads(line)
            except ValueError:
                continue
            if not isinstance(request, dict) or "method" not in request or request.get("id") is None:
                continue  # a notification (or not JSON-RPC): nothing to answer
            error = ErrorData(code=INTERNAL_ERROR, message=f"parley mcp cannot start: {message}")
            answer = JSONRPCError(jsonrpc="2.0", id=request["id"], error=error)
            stdout.write(answer.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n")
            stdout.flush()
    except (OSError, ValueError):  # stdin or stdout closed, or not readable (under a test runner)
        return
