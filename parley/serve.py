"""`parley serve`: the bot's composition root, over HTTP (uvicorn) or Socket Mode.

Over HTTP, one process serves all of these on one port:
- `/slack/events`: bolt's sync app through its WSGI adapter, on a thread pool of its own
- `/healthz` and `/metrics`
- the HTTP API under `/api/v1` (async)
- MCP over streamable HTTP at `/mcp`, and the approval gateway at `/mcp/gateway`
With `--metrics-port N`, `/metrics` is served on a listener of its own instead. The public port
then answers 404 for it. One process keeps MCP sessions, whose streams resume from Redis.
`--workers N` serves `/mcp` stateless, since a session lives in the process that opened it
(`bot.mcp.http`).
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import redis
import redis.asyncio as aioredis
import uvicorn
from slack_sdk.errors import SlackApiError
from starlette.routing import BaseRoute

from bot.app import create_app
from bot.asgi import make_asgi
from bot.deps import BotDeps
from bot.http_heads import HeadLimits
from bot.mcp.events import RedisEventStore
from bot.mcp.gateway.http import gateway_route
from bot.mcp.http import mcp_route
from bot.mcp.rebinding import LOOPBACK_HOSTS, default_hosts, is_loopback, transport_security
from bot.mcp.rules import RulesConfig, load_config
from bot.slack.channel_names import SlackChannelNames
from bot.slack.client import make_web_client
from bot.slack.host import SlackHost
from bot.slack.reply_reading import ReplyReader
from bot.wsgi import make_wsgi
from parley import settings as settings_mod
from parley.bootstrap import build_runtime, connect_redis, question_config
from parley.installs import oauth_settings, web_clients
from parley.settings import Settings
from parley.worker import add_api_host
from workers.exceptions import ConfigError
from workers.llm import llm_config_from_env
from workers.logs import Log
from workers.questions import QuestionService
from workers.runs import RunService
from workers.runtime.host import InteractorRouter
from workers.runtime.wiring import Runtime
from workers.store import connection
from workers.store.closings import Closings
from workers.store.event_logs import EventLogs

log = Log("parley.serve")
SOCKET_MODE_READY = "Connected to Slack over Socket Mode."
SOCKET_MODE_LOGGER = "parley.socket_mode"
"""The logger of the Socket Mode connection, held at INFO or above (see `serve`)."""


def check_settings(settings: Settings, *, socket_mode: bool = False) -> None:
    """Refuse settings the bot cannot serve with, before claiming to serve.

    The `ConfigError` names the variable.
    """
    if settings.oauth_mode and socket_mode:
        raise ConfigError("SLACK_CLIENT_ID: OAuth installs are served over HTTP; serve without --socket-mode")
    if not settings.oauth_mode:
        settings.require("slack_bot_token")
    if socket_mode:
        settings.require("slack_app_token")
    else:
        settings.require("slack_signing_secret")


def check_port(host: str, port: int) -> None:
    """Refuse, in one line, an address nothing can listen on, before claiming to serve.

    Binding there is tried as uvicorn binds, then let go. Otherwise uvicorn would log a bare
    `[Errno 98]` after the "serving" line, and exit 3.
    """
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        ):
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:  # as asyncio's servers do
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(address)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} is in use; pick another with --port") from None
        raise ConfigError(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc})") from None


def reply_reader(runtime: Runtime) -> ReplyReader:
    """The model reading of replies (`PARLEY_LLM_ANSWERS=on`).

    Its `PARLEY_LLM_*` settings must be set.
    """
    return ReplyReader(llm_config_from_env(os.environ), runtime.store.proposals)


def build_bot(settings: Settings, *, socket_mode: bool = False) -> tuple[Any, Any]:
    """The bolt app and its Redis client (see `build_bot_deps`)."""
    app, client, _ = build_bot_deps(settings, socket_mode=socket_mode)
    return app, client


def build_bot_deps(settings: Settings, *, socket_mode: bool = False) -> tuple[Any, Any, BotDeps]:
    """Wire one bot process: Redis, runtime, Web API clients, Slack host, bolt app.

    It serves one workspace (`SLACK_BOT_TOKEN`), or many through OAuth (`parley/installs.py`).
    """
    check_settings(settings, socket_mode=socket_mode)
    client = connect_redis(settings, request_path=True)
    clients = web_clients(settings, client)
    web = clients.single or make_web_client(None, settings.slack_api_url)
    hosts = InteractorRouter()
    runtime = build_runtime(settings, client, hosts)
    slack = SlackHost(clients, runtime.store, notify_assignees=settings.parley_notify_assignees)
    hosts.register("slack", slack)
    question_config(settings)  # an accepted answer queues its webhook or signal with these settings
    add_api_host(runtime, clients)
    admins = settings.parley_admins
    team_admins = {scope: frozenset(users) for scope, users in admins.items() if scope}
    deps = BotDeps(
        runs=RunService(runtime),
        client=web,
        slack=slack,
        admins=frozenset(admins.get("", ())),
        team_admins=team_admins,
        start_limits=settings.start_limits,
        reader=reply_reader(runtime) if settings.parley_llm_answers else None,
    )
    signing_secret = None if socket_mode else settings.slack_signing_secret
    app = create_app(deps, signing_secret=signing_secret, oauth_settings=oauth_settings(settings, clients, client))
    return app, client, deps


def async_redis(settings: Settings, client: redis.Redis) -> aioredis.Redis:
    """An asyncio client to `client`'s Redis, for the long-polls' pub/sub."""
    if settings.redis_url:
        return connection.connect_async(settings.redis_url)
    return aioredis.Redis(unix_socket_path=client.connection_pool.connection_kwargs["path"])


def mcp_rules(settings: Settings) -> RulesConfig | None:
    """The rules file of `/mcp`'s approve_tool_use (`PARLEY_MCP_CONFIG`), if set.

    A `RulesError` says what is wrong.
    """
    return load_config(settings.parley_mcp_config, os.environ) if settings.parley_mcp_config else None


def bot_asgi(settings: Settings | None = None, *, public_metrics: bool = True, mcp_sessions: bool = True) -> Any:
    """The whole HTTP app of one `parley serve` process.

    It is a factory, which uvicorn calls per process. `public_metrics`: `/metrics` on this app's
    port. It is off when `--metrics-port` serves them apart. `mcp_sessions`: `/mcp` keeps sessions
    with resumable streams. It is off for `--workers N`, where `/mcp` is stateless.
    """
    from workers import logs

    settings = settings or settings_mod.load()
    logs.configure(settings.parley_log_level, settings.parley_log_format)
    app, client, deps = build_bot_deps(settings)
    channels = SlackChannelNames(web_clients(settings, client))
    aio = async_redis(settings, client)
    service = QuestionService(deps.runs.runtime, question_config(settings), channels=channels, closings=Closings(aio))
    hosts = settings.parley_allowed_hosts or LOOPBACK_HOSTS
    security = transport_security(hosts, settings.parley_mcp_allowed_origins)
    events = RedisEventStore(EventLogs(aio)) if mcp_sessions else None
    mcp, manager = mcp_route(service, security, events, mcp_rules(settings))
    mounts: list[BaseRoute] = [mcp]
    lifespans: list[Callable[[], AbstractAsyncContextManager[Any]]] = [manager.run]
    gateway = gateway_config(settings)
    if gateway is not None:
        route, gateway_lifespan = gateway_route(service, gateway, security)
        mounts.append(route)
        lifespans.append(gateway_lifespan)
    wsgi = make_wsgi(app, client, public_metrics=public_metrics)
    return make_asgi(wsgi, service, mounts=mounts, lifespans=lifespans, on_stop=_metrics_stop)


def bot_asgi_workers() -> Any:
    """`bot_asgi` for `serve --workers N`, with `/mcp` stateless.

    Any of the N processes may get a request.
    """
    return bot_asgi(mcp_sessions=False)


def gateway_config(settings: Settings) -> RulesConfig | None:
    """The rules of `/mcp/gateway` (`PARLEY_MCP_CONFIG`), when that file names upstreams.

    A bad file raises `RulesError`.
    """
    config = mcp_rules(settings)
    return config if config is not None and config.upstreams else None


def bot_asgi_private_metrics() -> Any:
    """`bot_asgi` for `serve --workers N --metrics-port M`.

    The metrics are on port M, not on this app's.
    """
    return bot_asgi(public_metrics=False, mcp_sessions=False)


def _metrics_stop() -> None:
    """Drop a stopped process from the summed metrics' live gauges (`serve --workers N`)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())


def run_asgi(app: Any, host: str, port: int, workers: int = 1) -> None:
    """uvicorn, quiet, its request heads capped and read under a deadline (`HeadLimits`).

    With `workers` > 1, `app` is the import string of a factory.
    """
    uvicorn.run(
        app,
        host=host,
        port=port,
        http=HeadLimits,
        workers=workers if workers > 1 else None,
        factory=isinstance(app, str),
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=10,
        lifespan="on",
    )


def serve(
    settings: Settings,
    *,
    host: str,
    port: int,
    workers: int = 1,
    socket_mode: bool = False,
    metrics: tuple[str, int] | None = None,
) -> int:
    """Serve over HTTP or Socket Mode.

    Metrics go on `metrics` (host and port) if given, else over HTTP at /metrics.
    """
    if socket_mode:
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        from parley.metrics_setup import serve_metrics
        from workers.store.runs import RunStore

        bolt, client = build_bot(settings, socket_mode=True)
        if metrics:
            serve_metrics(RunStore(client), *metrics)
        # Not the app's logger, which the handler would take: at DEBUG (PARLEY_LOG_LEVEL), slack_sdk's
        # Socket Mode client logs every envelope whole ("on_message invoked: …"). Those hold form
        # values and typed replies, secret answers included. Its own logger, held at INFO or above,
        # keeps its connection lines and drops the payloads.
        quiet = logging.getLogger(SOCKET_MODE_LOGGER)
        quiet.setLevel(max(logging.INFO, logging.getLogger().getEffectiveLevel()))
        handler = SocketModeHandler(bolt, app_token=settings.slack_app_token, logger=quiet)
        handler.client.web_client.base_url = settings.slack_api_url
        try:
            handler.connect()
        except SlackApiError as exc:
            raise ConfigError(f"SLACK_APP_TOKEN: Slack refused it ({exc.response.get('error')})") from None
        log.info("serving over Socket Mode")
        print(SOCKET_MODE_READY, flush=True)  # `parley up` waits for this line
        threading.Event().wait()  # the connection's threads serve until the process is stopped
        return 0
    check_settings(settings)
    gateway_config(settings)  # a bad rules file stops here, in words, before any process starts
    check_port(host, port)
    settings = _mcp_hosts(settings, host)
    log.info("serving over HTTP", bind=f"{host}:{port}", workers=workers)
    app: Any
    if workers > 1:
        build_bot(settings)  # fail fast on bad settings, before starting the processes
        mcp_rules(settings)
        app = "parley.serve:bot_asgi_private_metrics" if metrics else "parley.serve:bot_asgi_workers"
    else:
        app = bot_asgi(settings, public_metrics=metrics is None)
    if metrics:
        from parley.metrics_setup import serve_metrics
        from workers.store.runs import RunStore

        serve_metrics(RunStore(connect_redis(settings)), *metrics)  # with --workers N: all N, summed
    run_asgi(app, host, port, workers)
    return 0


def _mcp_hosts(settings: Settings, bind: str) -> Settings:
    """`settings` with `/mcp`'s `Host` names taken from the bind address.

    This applies when `PARLEY_ALLOWED_HOSTS` is unset. They are passed on to the processes of
    `--workers N`, which read their settings anew.
    """
    if settings.parley_allowed_hosts:
        return settings
    hosts = default_hosts(bind)
    os.environ["PARLEY_ALLOWED_HOSTS"] = ",".join(hosts)
    if not is_loopback(bind):
        log.warning("/mcp answers only these Host names; list the others in PARLEY_ALLOWED_HOSTS", hosts=hosts)
    return settings.model_copy(update={"parley_allowed_hosts": hosts})
