"""The gateway's client sessions to its upstream MCP servers, and the tools it lists for them.

A task of its own holds each upstream open: the SDK's `Client`, over stdio or streamable HTTP.
An upstream may fail to start, or die later. That is an error on its own tools' calls. It never
stops the gateway or the other upstreams. One that goes away is reconnected after a wait that
doubles up to a minute. Until then its tools are not listed. Its tools are read again when it
says they changed (`notifications/tools/list_changed`). It is reached over the handshake-era
protocol unless its `protocol` says otherwise. So an upstream's `ctx.elicit` works. Each call
has the upstream's `timeout` (`deadlines`).

A tool is listed as `<upstream>.<tool>`. With `flat` it is unprefixed, which needs exactly one
upstream. The upstream's input schema, description, annotations and output schema are unchanged.
A name outside ASCII is noted (`names`). The rules always see the full name.
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
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bot.mcp.gateway.deadlines import Clock, human
from bot.mcp.gateway.names import flagged
from bot.mcp.gateway.watch import watched
from bot.mcp.rules import RulesConfig, RulesError, Upstream
from workers.exceptions import ParleyError
from workers.logs import Log

log = Log("parley.mcp.gateway")
CONNECT_TIMEOUT = 30.0
BACKOFF = (1.0, 60.0)
"""The first and the longest wait, in seconds, before reconnecting to an upstream that went away."""
STEADY = 60.0
"""Seconds a session must have lasted for the next reconnection to start again from the first wait."""
Elicit = Callable[[str, types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]
"""Answers upstream `name`'s elicitation (`bot.mcp.gateway.elicitations`)."""


class GatewayError(ParleyError):
    """A call the gateway cannot route: unknown tool or upstream, or unreachable upstream."""


class UnknownTool(GatewayError):
    """A name with no listed tool: a protocol error (invalid params), not a tool error."""


@dataclass(frozen=True)
class Target:
    """One upstream tool: its upstream, its name there, its rules name, its listing."""

    upstream: str
    tool: types.Tool

    @property
    def full_name(self) -> str:
        return f"{self.upstream}.{self.tool.name}"


async def _client(
    upstream: Upstream, held: contextlib.AsyncExitStack, on_elicit: Any, mode: ConnectMode, watch: Watch
) -> Client:
    """The SDK's unconnected client for `upstream`.

    An HTTP client it needs is closed with `held`.
    """
    options: dict[str, Any] = {"elicitation_callback": on_elicit, "mode": mode, "message_handler": watch.message}
    if upstream.command is not None:
        command, *args = upstream.command
        params = StdioServerParameters(command=command, args=args, env=dict(upstream.env) or None)
        return Client(watched(stdio_client(params), watch.gone), cache=None, **options)
    assert upstream.url is not None
    timeout = httpx2.Timeout(30, read=300)
    http = await held.enter_async_context(httpx2.AsyncClient(headers=dict(upstream.headers), timeout=timeout))
    transport = streamable_http_client(upstream.url, http_client=http)
    return Client(watched(transport, watch.gone), cache=None, **options)


class Watch:
    """What an upstream session says of itself: it went away, or its tools changed."""

    def __init__(self) -> None:
        self.gone = anyio.Event()
        self._changed, self.changes = anyio.create_memory_object_stream[None](1)

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            with contextlib.suppress(anyio.WouldBlock):
                self._changed.send_nowait(None)


class Upstreams:
    """The upstream sessions of one gateway, open between `__aenter__` and `__aexit__`."""

    def __init__(
        self,
        config: RulesConfig,
        *,
        flat: bool = False,
        mode: ConnectMode | None = None,
        backoff: tuple[float, float] = BACKOFF,
    ) -> None:
        """`mode` overrides each upstream's `protocol`.

        A protocol is the SDK's negotiation, or "legacy" for the handshake. `backoff`: the first and
        longest wait before reconnecting to a departed upstream.
        """
        if not config.upstreams:
            raise RulesError("the gateway's rules file names no `upstreams`")
        if flat and len(config.upstreams) != 1:
            raise RulesError(f"--flat needs exactly one upstream, and the rules file names {len(config.upstreams)}")
        self.config = config
        self.flat = flat
        self.mode = mode
        self.backoff = backoff
        self.clients: dict[str, Client] = {}
        self.tools: dict[str, list[types.Tool]] = {}
        self.errors: dict[str, str] = {}
        self.clocks = {name: Clock(upstream.timeout) for name, upstream in config.upstreams.items()}
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
        """Keep `name`'s session open until the gateway stops, reconnecting with backoff."""
        started = False

        def ready() -> None:
            nonlocal started
            if not started:
                started = True
                task_status.started()

        delay = self.backoff[0]
        while not self._stop.is_set():
            lasted = await self._session(name, upstream, ready)
            ready()
            if self._stop.is_set():
                return
            delay = self.backoff[0] if lasted >= STEADY else min(delay * 2, self.backoff[1])
            log.info("upstream reconnecting", upstream=name, after=delay)
            with anyio.move_on_after(delay):
                await self._stop.wait()

    async def _session(self, name: str, upstream: Upstream, ready: Callable[[], None]) -> float:
        """Open `name`'s session, list its tools, and hold it while it lasts.

        Returns how long it was up.
        """

        async def on_elicit(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult | types.ErrorData:
            if self.elicit is None:
                return types.ErrorData(code=types.INVALID_REQUEST, message="the gateway answers no elicitation")
            with self.clocks[name].held():  # people's time is not the upstream's
                return await self.elicit(name, params)

        watch = Watch()
        mode = self.mode or upstream.protocol
        since = None
        try:
            async with (
                contextlib.AsyncExitStack() as held,
                await _client(upstream, held, on_elicit, mode, watch) as client,
            ):
                with anyio.fail_after(CONNECT_TIMEOUT):
                    listed = await client.list_tools()
                self.clients[name], self.tools[name] = client, list(listed.tools)
                self.errors.pop(name, None)
                log.info("upstream connected", upstream=name, tools=len(listed.tools))
                ready()
                since = anyio.current_time()
                await self._watch(name, client, watch)
        except Exception as exc:  # an upstream that cannot start or dies: its tools answer with why
            self.errors[name] = _why(exc)
            log.warning("upstream unreachable", upstream=name, error=self.errors[name])
        finally:
            self.clients.pop(name, None)
            self.tools.pop(name, None)  # listed only while it answers
        if watch.gone.is_set() and not self._stop.is_set():
            self.errors[name] = "its connection closed; the gateway is reconnecting"
            log.warning("upstream went away", upstream=name)
        return anyio.current_time() - since if since is not None else 0.0

    async def _watch(self, name: str, client: Client, watch: Watch) -> None:
        """Re-read the upstream's tools whenever it says they changed.

        This goes on until the gateway stops or the upstream goes.
        """
        async with anyio.create_task_group() as tg:

            async def until(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(until, self._stop)
            tg.start_soon(until, watch.gone)
            async for _ in watch.changes:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    listed = await client.list_tools()
                self.tools[name] = list(listed.tools)
                log.info("upstream tools changed", upstream=name, tools=len(listed.tools))

    # ---- tools ---------------------------------------------------------------------------
    def listed_name(self, target: Target) -> str:
        return target.tool.name if self.flat else target.full_name

    def listed(self) -> list[types.Tool]:
        """Every reachable upstream tool under the name the gateway lists it by."""
        out: list[types.Tool] = []
        for name, tools in self.tools.items():
            for tool in tools:
                out.append(flagged(name, tool).model_copy(update={"name": self.listed_name(Target(name, tool))}))
        return out

    def resolve(self, listed_name: str) -> Target:
        """The upstream tool listed as `listed_name`.

        Otherwise `GatewayError` says what is wrong.
        """
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

    async def call(
        self, target: Target, arguments: dict[str, Any], meta: dict[str, Any] | None = None
    ) -> types.CallToolResult:
        """The upstream's result for `target` called with `arguments`.

        `meta`, the approval's receipt, goes as `_meta`. An upstream that fails is a tool error.
        """
        client = self.clients.get(target.upstream)
        if client is None:
            raise GatewayError(f"upstream {target.upstream!r} is unreachable: {self.errors.get(target.upstream)}")
        clock = self.clocks[target.upstream]
        try:
            with clock.deadline() as deadline:
                return await client.call_tool(target.tool.name, arguments, meta=meta)  # type: ignore[arg-type]
        except Exception as exc:
            raise GatewayError(f"upstream {target.upstream!r} failed on {target.tool.name}: {_why(exc)}") from exc
        if deadline.cancelled_caught:
            log.warning("upstream call timed out", upstream=target.upstream, tool=target.tool.name)
            raise GatewayError(
                f"upstream {target.upstream!r} did not answer {target.tool.name} within {human(clock.seconds)}"
                " (its `timeout`); the call was stopped"
            )
        raise GatewayError(f"upstream {target.upstream!r} gave no result for {target.tool.name}")

    def unreachable(self, upstream: str) -> str | None:
        """Why `upstream` cannot be reached now, or None while it answers."""
        return None if upstream in self.tools else self.errors.get(upstream)

    def current(self, target: Target) -> types.Tool | None:
        """The tool `target` names as its upstream lists it now, or None if gone."""
        return next((t for t in self.tools.get(target.upstream, []) if t.name == target.tool.name), None)


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
