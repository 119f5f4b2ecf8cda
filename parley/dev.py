"""`parley dev`: the whole product on one machine, with a Slack playground in the browser.

It starts one `parley worker` (its webhook delivery threads in it; its metrics on port+2) and
`parley serve` (HTTP, on port+1, with a fresh signing secret, its metrics at /metrics) under a
`Supervisor`, and serves the playground itself on the given port: the Slack Web API stand-in
at /api/ that bot and worker call, and the page. Ctrl-C stops it all; a piece that stops on
its own stops everything with a message naming it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets

import httpx

from bot.playground.app import ServerThread, bind, create_playground_app
from bot.playground.workspace import Workspace
from parley.settings import Settings
from parley.supervisor import Supervisor
from workers.exceptions import ConfigError
from workers.logs import redacted

HOST = "127.0.0.1"
BOT_TOKEN = "xoxb-playground"
ADMIN = "U0ALICE"
TRY = "/parley ticket Create ticket for login issue"


def _port_free(port: int) -> bool:
    try:
        bind(HOST, port).close()
    except OSError:
        return False
    return True


class Dev:
    """The playground's pieces: the bot and a worker as children, the playground server in this process."""

    def __init__(self, settings: Settings, port: int) -> None:
        self.settings = settings
        self.port = port
        self.bot_port = port + 1
        self.metrics_port = port + 2
        self.secret = secrets.token_hex(16)
        self.supervisor = Supervisor("dev", self.env())
        self.server: ServerThread | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
        env.update(
            SLACK_BOT_TOKEN=BOT_TOKEN,
            SLACK_SIGNING_SECRET=self.secret,
            SLACK_API_URL=f"http://{HOST}:{self.port}/api/",
            PARLEY_ADMINS=ADMIN,
            PARLEY_DATA_DIR=str(self.settings.parley_data_dir),
            PYTHONUNBUFFERED="1",
        )
        if self.settings.redis_url:
            env["REDIS_URL"] = self.settings.redis_url
        else:
            env.pop("REDIS_URL", None)
        return env

    def check_ports(self) -> None:
        for port in (self.port, self.bot_port, self.metrics_port):
            if not _port_free(port):
                raise ConfigError(
                    f"port {port} is in use; pick another with --port (parley dev uses PORT, PORT+1 and PORT+2)"
                )

    def start(self) -> None:
        self.supervisor.spawn("serve", "serve", "--host", HOST, "--port", str(self.bot_port))
        self.supervisor.spawn(
            "worker",
            "worker",
            "--name",
            f"parley-dev-{self.port}-{os.getpid()}",
            "--metrics-port",
            str(self.metrics_port),
        )
        self.supervisor.start_output()
        app = create_playground_app(
            Workspace(), bot_url=f"http://{HOST}:{self.bot_port}/slack/events", signing_secret=self.secret
        )
        server = self.server = ServerThread(app, bind(HOST, self.port))
        self.supervisor.also_watch(lambda: None if server.alive else "the playground server stopped", server.stop)
        server.start()

    def healthz(self) -> str:
        return f"http://{HOST}:{self.bot_port}/healthz"

    def bot_answers(self) -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(self.healthz(), timeout=1).status_code == 200
        return False

    def banner(self) -> None:
        redis_note = redacted(self.settings.redis_url or "") or f"embedded Redis in {self.settings.parley_data_dir}"
        print(f"Parley playground: http://{HOST}:{self.port}  (bot on :{self.bot_port}, {redis_note})", flush=True)
        print(
            f"Metrics: http://{HOST}:{self.bot_port}/metrics (bot), http://{HOST}:{self.metrics_port}/metrics (worker)",
            flush=True,
        )
        print(f"Try {TRY!r} in #general. Ctrl-C stops everything.", flush=True)
        print(f"HTTP API: http://{HOST}:{self.bot_port}/api/v1 (a token: parley tokens create NAME)", flush=True)


def run_dev(settings: Settings, *, port: int = 3000) -> int:
    """Run everything until Ctrl-C (exit 0) or until a piece dies (exit 1)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the playground's own requests are not news
    dev = Dev(settings, port)
    dev.check_ports()
    return dev.supervisor.run(
        settings,
        start=dev.start,
        ready=lambda: dev.supervisor.wait_until(dev.bot_answers, f"the bot did not answer {dev.healthz()}"),
        banner=dev.banner,
    )
