"""`parley mcp gateway --config gateway.yml [--flat]`: the approval gateway over stdio, for MCP hosts.

It proxies the rules file's upstream MCP servers (`bot.mcp.gateway`) with the machine's own
configuration. That is as `parley mcp` does. Its approvals are attributed to
`PARLEY_MCP_ORIGIN`. The answer arrives at `parley serve` from Slack. A standing approval
belongs to this process's MCP session. stdout is the MCP channel, so logs go to stderr.
"""

from __future__ import annotations

import os
import uuid
from functools import partial

import anyio
from mcp.server.stdio import stdio_server

from bot.mcp.gateway.server import build_gateway
from bot.mcp.gateway.upstreams import Upstreams
from bot.mcp.rules import RulesConfig, load_config
from parley.mcp_cmd import build_service
from parley.settings import Settings
from workers.logs import Log
from workers.questions import Caller, QuestionService
from workers.questions.waiting import listening

log = Log("parley.mcp.gateway")


async def serve_gateway_stdio(
    service: QuestionService, config: RulesConfig, origin: str, *, flat: bool = False
) -> None:
    caller = Caller(origin, via="mcp")
    session = f"stdio:{uuid.uuid4().hex}"
    upstreams = Upstreams(config, flat=flat)  # refuses --flat with several upstreams before anything starts
    async with listening(service), upstreams:
        server = build_gateway(service, upstreams, lambda ctx: caller, lambda ctx: session)
        async with stdio_server() as (read_stream, write_stream):
            log.info("serving the MCP gateway over stdio", origin=origin, upstreams=len(config.upstreams))
            await server.run(read_stream, write_stream, server.create_initialization_options())


def run_gateway(settings: Settings, config_path: str, *, flat: bool = False) -> int:
    config = load_config(config_path, os.environ)  # the environment, read here at the entry point
    Upstreams(config, flat=flat)  # a rules file the gateway cannot serve is refused before connecting
    service = build_service(settings)
    anyio.run(partial(serve_gateway_stdio, service, config, settings.parley_mcp_origin, flat=flat))
    return 0
