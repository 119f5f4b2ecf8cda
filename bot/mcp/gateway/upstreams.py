"""The gateway's client sessions to its upstream MCP servers, and the tools it lists for them.

Each upstream is held open by a task of its own (the SDK's `Client`, over stdio or streamable
HTTP), so an upstream that fails to start, or dies later, is an error on its own tools' calls
and never stops the gateway or the other upstreams. A tool is listed as `<upstream>.<tool>`
(unprefixed with `flat`, which needs exactly one upstream) with the upstream's input schema,
description, annotations and output schema unchanged; the rules always see the full name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskStatus
from mcp import Client
from mcp.client.client import ConnectMode
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from bot.mcp.rules import RulesConfig, RulesError, Upstream
from workers.exceptions import ParleyError
from workers.logs import Log

log = Log("parley.mcp.gateway")
CONNECT_TIMEOUT = 30.0
Elicit = Callable[[str, types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]
"""Answers upstream `name`'s elicitation (`bot.mcp.gateway.elicitations`)."""


class GatewayError(ParleyError):
    """A call the gateway cannot route: an unknown tool or upstream, or an upstream it cannot reach."""


class UnknownTool(GatewayError):
    """A name the gateway lists no tool under: a protocol error (invalid params), not a tool error."""


@dataclass(frozen=True)
class Target:
    """One upstream tool: where it lives, its name there, the name the rules match and the listed tool."""

    upstream: str
    tool: types.Tool

    @property
    def full_name(self) -> str:
        return f"{self.upstream}.{self.tool.name}"


async def _client(upstream: Upstream, held: contextlib.AsyncExitStack, on_elicit: Any, mode: ConnectMode) -> Client:
    """The SDK's client for `upstream`, not yet connected; an HTTP client it needs is closed with `held`."""
    if upstream.command is not None:
        command, *args = upstream.command
        params = StdioServerParameters(command=command, args=args, env=dict(upstream.env) or None)
        return Client(params, elicitation_callback=on_elicit, mode=mode)
    assert upstream.url is not None
    timeout = httpx2.Timeout(30, read=300)
    http = await held.enter_async_context(httpx2.AsyncClient(headers=dict(upstream.headers), timeout=timeout))
    transport = streamable_http_client(upstream.url, http_client=http)
    return Client(transport, elicitation_callback=on_elicit, mode=mode)


class Upstreams:
    """The upstream sessions of one gateway, open between `__aenter__` and `__aexit__`."""

    def __init__(self, config: RulesConfig, *, flat: bool = False, mode: ConnectMode = "auto") -> None:
        """`mode` is the SDK's protocol negotiation ("legacy": the initialize handshake only)."""
        if not config.upstreams:
            raise RulesError("the gateway's rules file names no `upstreams`")
        if flat and len(config.upstreams) != 1:
            raise RulesError(f"--flat needs exactly one upstream, and the rules file names {len(config.upstreams)}")
        self.config = config
        self.flat = flat
        self.mode = mode
        self.clients: dict[str, Client] = {}
        self.tools: dict[str, list[types.Tool]] = {}
        self.errors: dict[str, str] = {}
        self.elicit: Elicit | None = None
        """Set by the gateway's server: who answers an upstream's elicitation (none: it is refused)."""
        self._stop = anyio.Event()
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Upstreams:
        tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.push_async_callback(self._stop_all)
        for name, upstream in self.config.upstreams.items():
            await tg.start(self._hold, name, upstream)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._stack.aclose()

    async def _stop_all(self) -> None:
        self._stop.set()

    async def _hold(self, name: str, upstream: Upstream, *, task_status: TaskStatus[None]) -> None:
        """Open `name`'s session, list its tools, and keep it open until the gateway stops."""
        started = False
        try:

            async def on_elicit(
                context: ClientRequestContext, params: types.ElicitRequestParams
            ) -> types.ElicitResult | types.ErrorData:
                if self.elicit is None:
                    return types.ErrorData(code=types.INVALID_REQUEST, message="the gateway answers no elicitation")
                return await self.elicit(name, params)

            async with (
                contextlib.AsyncExitStack() as held,
                await _client(upstream, held, on_elicit, self.mode) as client,
            ):
                with anyio.fail_after(CONNECT_TIMEOUT):
                    listed = await client.list_tools()
                self.clients[name], self.tools[name] = client, list(listed.tools)
                log.info("upstream connected", upstream=name, tools=len(listed.tools))
                task_status.started()
                started = True
                await self._stop.wait()
        except Exception as exc:  # an upstream that cannot start or dies: its tools answer with why
            self.errors[name] = _why(exc)
            self.clients.pop(name, None)
            log.warning("upstream unreachable", upstream=name, error=self.errors[name])
        finally:
            if not started:
                task_status.started()

    # ---- tools ---------------------------------------------------------------------------
    def listed_name(self, target: Target) -> str:
        return target.tool.name if self.flat else target.full_name

    def listed(self) -> list[types.Tool]:
        """Every reachable upstream tool under the name the gateway lists it by."""
        out: list[types.Tool] = []
        for name, tools in self.tools.items():
            for tool in tools:
                out.append(tool.model_copy(update={"name": self.listed_name(Target(name, tool))}))
        return out

    def resolve(self, listed_name: str) -> Target:
        """The upstream tool listed as `listed_name`; `GatewayError` saying what is wrong otherwise."""
        if self.flat:
            upstream, tool = next(iter(self.config.upstreams)), listed_name
        else:
            upstream, dot, tool = listed_name.partition(".")
            if not dot:
                raise UnknownTool(f"unknown tool {listed_name!r}: tools are named '<upstream>.<tool>'")
        if upstream not in self.config.upstreams:
            known = ", ".join(sorted(self.config.upstreams))
            raise UnknownTool(f"unknown upstream {upstream!r} in {listed_name!r}; this gateway has {known}")
        if upstream in self.errors or upstream not in self.clients:
            why = self.errors.get(upstream, "not connected")
            raise GatewayError(f"upstream {upstream!r} is unreachable: {why}")
        found = next((t for t in self.tools[upstream] if t.name == tool), None)
        if found is None:
            raise UnknownTool(f"upstream {upstream!r} has no tool {tool!r}")
        return Target(upstream, found)

    async def call(self, target: Target, arguments: dict[str, Any]) -> types.CallToolResult:
        """The upstream's result for `target` called with `arguments`; an upstream that fails is a tool error."""
        client = self.clients.get(target.upstream)
        if client is None:
            raise GatewayError(f"upstream {target.upstream!r} is unreachable: {self.errors.get(target.upstream)}")
        try:
            return await client.call_tool(target.tool.name, arguments)
        except Exception as exc:
            raise GatewayError(f"upstream {target.upstream!r} failed on {target.tool.name}: {_why(exc)}") from exc


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
