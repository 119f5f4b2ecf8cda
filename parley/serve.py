"""`parley serve`: the bot's composition root, over HTTP (gunicorn) or Socket Mode."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication
from slack_sdk.errors import SlackApiError

from bot.app import create_app
from bot.deps import BotDeps
from bot.slack.client import make_web_client
from bot.slack.host import SlackHost
from bot.wsgi import make_wsgi
from parley.bootstrap import build_runtime, connect_redis
from parley.installs import oauth_settings, web_clients
from parley.settings import Settings
from workers.exceptions import ConfigError
from workers.logs import Log
from workers.runtime.host import HostRouter

log = Log("parley.serve")
THREADS = 32
SOCKET_MODE_READY = "Connected to Slack over Socket Mode."


def build_bot(settings: Settings, *, socket_mode: bool = False) -> tuple[Any, Any]:
    """Wire one bot process: Redis, runtime, Web API clients, Slack host, bolt app.

    One workspace (`SLACK_BOT_TOKEN`), or many through OAuth (`parley/installs.py`)."""
    if settings.oauth_mode and socket_mode:
        raise ConfigError("SLACK_CLIENT_ID: OAuth installs are served over HTTP; serve without --socket-mode")
    if not settings.oauth_mode:
        settings.require("slack_bot_token")
    if not socket_mode:
        settings.require("slack_signing_secret")
    client = connect_redis(settings, request_path=True)
    clients = web_clients(settings, client)
    web = clients.single or make_web_client(None, settings.slack_api_url)
    hosts = HostRouter()
    runtime = build_runtime(settings, client, hosts)
    slack = SlackHost(clients, runtime.store, notify_assignees=settings.parley_notify_assignees)
    hosts.register("slack", slack)
    admins = settings.parley_admins
    team_admins = {scope: frozenset(users) for scope, users in admins.items() if scope}
    deps = BotDeps(
        runtime=runtime, client=web, slack=slack, admins=frozenset(admins.get("", ())), team_admins=team_admins
    )
    signing_secret = None if socket_mode else settings.slack_signing_secret
    app = create_app(deps, signing_secret=signing_secret, oauth_settings=oauth_settings(settings, clients, client))
    return app, client


def gunicorn_options(host: str, port: int, workers: int = 1) -> dict[str, Any]:
    """The HTTP stack: gunicorn's threaded workers for bolt's sync `App` (RQ has no async API)."""
    return {
        "bind": f"{host}:{port}",
        "workers": workers,
        "worker_class": "gthread",
        "threads": THREADS,
        "timeout": 30,
        "graceful_timeout": 10,
        "accesslog": None,
        "loglevel": "warning",
        "preload_app": False,
        **({"child_exit": _metrics_child_exit} if workers > 1 else {}),
    }


def _metrics_child_exit(server: Any, worker: Any) -> None:
    """gunicorn's hook: a process that exited no longer counts in the summed metrics' live gauges."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


class WsgiServer(BaseApplication):  # type: ignore[misc]
    """Gunicorn, configured in code; `load` runs in each worker process (nothing is preloaded)."""

    def __init__(self, options: dict[str, Any], load: Callable[[], Any]) -> None:
        self._options = options
        self._load = load
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        return self._load()


def _bot_wsgi(settings: Settings) -> Any:
    from workers import logs

    logs.configure(settings.parley_log_level)
    app, client = build_bot(settings)
    return make_wsgi(app, client)


def serve(
    settings: Settings,
    *,
    host: str,
    port: int,
    workers: int = 1,
    socket_mode: bool = False,
    metrics: tuple[str, int] | None = None,
) -> int:
    """Serve over HTTP (metrics at /metrics) or Socket Mode (metrics on `metrics`, host and port, if given)."""
    if socket_mode:
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        from parley.metrics_setup import serve_metrics
        from workers.store.runs import RunStore

        settings.require("slack_app_token")
        app, client = build_bot(settings, socket_mode=True)
        if metrics:
            serve_metrics(RunStore(client), *metrics)
        handler = SocketModeHandler(app, app_token=settings.slack_app_token)
        handler.client.web_client.base_url = settings.slack_api_url
        try:
            handler.connect()
        except SlackApiError as exc:
            raise ConfigError(f"SLACK_APP_TOKEN: Slack refused it ({exc.response.get('error')})") from None
        log.info("serving over Socket Mode")
        print(SOCKET_MODE_READY, flush=True)  # `parley up` waits for this line
        threading.Event().wait()  # the connection's threads serve until the process is stopped
        return 0
    build_bot(settings)  # fail fast on bad settings, before forking workers
    options = gunicorn_options(host, port, workers)
    log.info("serving over HTTP", bind=options["bind"], workers=workers)
    WsgiServer(options, lambda: _bot_wsgi(settings)).run()
    return 0
