"""`parley dev`: the whole product on one machine, with a Slack playground in the browser.

It starts two children under a `Supervisor`. One is `parley worker`, with its webhook delivery
threads, and metrics on port+2. The other is `parley serve`: HTTP on port+1, a fresh signing
secret, metrics at /metrics. It serves the playground itself on the given port. That holds the
Slack Web API stand-in at /api/ that bot and worker call, and the page. The bot's `/api/v1` and
`/mcp` are forwarded there. So the API and MCP answer on the port the banner prints first, as
under `parley serve`. Ctrl-C stops it all. A piece that stops on its own stops everything, with
a message naming it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import sys
from pathlib import Path
from typing import IO

import httpx

from bot.playground.app import ServerThread, bind, create_playground_app
from bot.playground.workspace import Workspace
from parley.bootstrap import connect_redis, token_store, usable_data_dir
from parley.dev_env import playground_secret_key, scripted_model
from parley.dev_receipts import playground_receipt_key
from parley.settings import Settings
from parley.supervisor import Supervisor
from workers.exceptions import ConfigError
from workers.logs import redacted
from workers.questions import tokens
from workers.questions.tokens import TokenError

HOST = "127.0.0.1"
BOT_TOKEN = "xoxb-playground"
ADMIN = "U0ALICE"
TRY = "/parley ticket Create ticket for login issue"
MCP_TOKEN_NAME = "playground-mcp"
"""The token `parley dev` makes on each start (revoking the last one) for the MCP host configuration it prints."""
DEV_LOCK = "dev.lock"
"""The file in the data directory a live `parley dev` holds locked, holding its pid and port."""


def _port_free(port: int) -> bool:
    try:
        bind(HOST, port).close()
    except OSError:
        return False
    return True


def hold_data_dir(data_dir: Path, port: int) -> IO[str]:
    """Lock `data_dir` (which exists) for this `parley dev`, or refuse if another holds it.

    Two on one folder would share its embedded Redis and job queue. The lock is an `flock` on
    `dev.lock`, which the kernel drops when the process dies, so a killed `parley dev` blocks no
    later one. Keep the returned file open as long as the lock is to be held.
    """
    lock = open(data_dir / DEV_LOCK, "a+")  # noqa: SIM115  (held open for the process's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().split()
        lock.close()
        which = f" (pid {holder[0]}, port {holder[1]})" if len(holder) == 2 else ""
        raise ConfigError(
            f"parley dev is already running for the data directory {data_dir}{which}; "
            "stop it first, or give this one its own PARLEY_DATA_DIR"
        ) from None
    lock.truncate(0)
    lock.write(f"{os.getpid()} {port}\n")
    lock.flush()
    return lock


def _parley_command() -> str:
    """The `parley` beside this Python, as in a virtualenv.

    A host started outside it would not find it by name.
    """
    beside = Path(sys.executable).parent / "parley"
    return str(beside) if beside.exists() else "parley"


class Dev:
    """The playground's pieces: bot and worker as children, the server in-process."""

    def __init__(self, settings: Settings, port: int) -> None:
        self.settings = settings
        self.port = port
        self.bot_port = port + 1
        self.metrics_port = port + 2
        self.secret = secrets.token_hex(16)
        self.model = scripted_model(os.environ, f"http://{HOST}:{port}")  # empty: a model is configured
        self.supervisor = Supervisor("dev", self.env())
        self.server: ServerThread | None = None
        self.workspace = Workspace()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
        env.update(
            SLACK_BOT_TOKEN=BOT_TOKEN,
            SLACK_SIGNING_SECRET=self.secret,
            SLACK_API_URL=f"http://{HOST}:{self.port}/api/",
            PARLEY_ADMINS=ADMIN,
            PARLEY_DATA_DIR=str(self.settings.parley_data_dir),
            PARLEY_WEBHOOK_LOOPBACK="true",  # a receiver on this machine, on any port, gets its webhooks
            PYTHONUNBUFFERED="1",
        )
        if self.settings.parley_secret_key is None:
            env["PARLEY_SECRET_KEY"] = playground_secret_key(self.settings.parley_data_dir)
        if self.settings.parley_receipt_key is None:  # every question's receipt is signed in the playground
            env["PARLEY_RECEIPT_KEY"] = str(playground_receipt_key(self.settings.parley_data_dir))
        env.update(self.model)
        if self.model or (env.get("PARLEY_LLM_BASE_URL") and env.get("PARLEY_LLM_MODEL")):
            env.setdefault("PARLEY_LLM_ANSWERS", "on")  # replies in plain words, confirmed in the thread
        if self.settings.redis_url:
            env["REDIS_URL"] = self.settings.redis_url
        else:
            env.pop("REDIS_URL", None)
        return env

    def check_ports(self) -> None:
        for port in (self.port, self.bot_port, self.metrics_port):
            if not _port_free(port):
                raise ConfigError(
                    f"port {port} is in use; pick another with --port (parley dev uses PORT, PORT+1 and PORT+2); "
                    "a second parley dev also needs a PARLEY_DATA_DIR of its own"
                )

    def start(self) -> None:
        self.supervisor.spawn("serve", "serve", "--host", HOST, "--port", str(self.bot_port), label="bot")
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
            self.workspace,
            bot_url=f"http://{HOST}:{self.bot_port}/slack/events",
            signing_secret=self.secret,
            forward_to=f"http://{HOST}:{self.bot_port}",
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

    def mcp_token(self) -> str:
        """A fresh `ask` token for the MCP configuration the banner prints.

        The last start's token is revoked.
        """
        store = token_store(connect_redis(self.settings))
        with contextlib.suppress(TokenError):
            tokens.revoke(store, MCP_TOKEN_NAME)
        return tokens.create(store, MCP_TOKEN_NAME, ["ask"]).token

    def mcp_config(self, token: str) -> dict[str, object]:
        """The `mcpServers` configuration an MCP host needs here, over stdio and HTTP."""
        env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_API_URL": f"http://{HOST}:{self.port}/api/"}
        if self.settings.redis_url:
            env["REDIS_URL"] = self.settings.redis_url
        else:
            env["PARLEY_DATA_DIR"] = str(self.settings.parley_data_dir)  # the same embedded Redis
        return {
            "mcpServers": {
                "parley": {"command": _parley_command(), "args": ["mcp"], "env": env},
                "parley-http": {
                    "type": "http",
                    "url": f"http://{HOST}:{self.port}/mcp",
                    "headers": {"Authorization": f"Bearer {token}"},
                },
            }
        }

    def banner(self) -> None:
        redis_note = redacted(self.settings.redis_url or "") or f"embedded Redis in {self.settings.parley_data_dir}"
        base = f"http://{HOST}:{self.port}"
        lines = [
            f"Parley playground: {base}  (bot on :{self.bot_port}, {redis_note})",
            f"Try {TRY!r} in #general. Ctrl-C stops everything.",
            "Channels: " + ", ".join(f"#{c.name} {c.id}" for c in self.workspace.channels()),
            f"HTTP API: {base}/api/v1 (a token: parley tokens create NAME)",
            f"MCP: {base}/mcp; a host's configuration for this playground (stdio and HTTP):",
            json.dumps(self.mcp_config(self.mcp_token()), indent=2),
            f"Metrics: http://{HOST}:{self.bot_port}/metrics (bot), http://{HOST}:{self.metrics_port}/metrics (worker)",
        ]
        if self.model:  # before the metrics line, which ends the banner
            lines.insert(
                -1,
                f"Model: a scripted stand-in at {self.model['PARLEY_LLM_BASE_URL']} (no PARLEY_LLM_* configured); "
                "pai_invoice and oa_cleanup run offline on it",
            )
        print("\n".join(lines), flush=True)


def run_dev(settings: Settings, *, port: int = 3000) -> int:
    """Run everything until Ctrl-C (exit 0) or a piece dies (exit 1)."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the playground's own requests are not news
    with hold_data_dir(usable_data_dir(settings), port):
        dev = Dev(settings, port)
        dev.check_ports()
        return dev.supervisor.run(
            settings,
            start=dev.start,
            ready=lambda: dev.supervisor.wait_until(dev.bot_answers, f"the bot did not answer {dev.healthz()}"),
            banner=dev.banner,
        )
