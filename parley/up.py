"""`parley up`: Parley in your own Slack workspace, in one process tree.

It is what `parley dev` is to the playground, against the real workspace. It runs the embedded
Redis unless REDIS_URL is set. It runs one `parley worker`, the agents' worker with its webhook
delivery threads. It runs `parley serve --socket-mode`. All run under one `Supervisor`, so
Ctrl-C stops it all. The tokens come from the environment or `.env`, where `parley slack setup`
saves them. The bot token is checked with `auth.test` before anything starts, naming the
workspace and bot. The banner is printed once the bot's Socket Mode connection is open. So a
command typed then is answered.
"""

from __future__ import annotations

import os

from parley.serve import SOCKET_MODE_READY
from parley.settings import Settings
from parley.slack_api_calls import SlackApiCalls, TokenRefused
from parley.supervisor import Supervisor
from workers.exceptions import ConfigError
from workers.logs import redacted

TRY = "type `/parley ticket …` in any channel the bot is in (invite it with `/invite @Parley`)"


def _children_env(settings: Settings) -> dict[str, str]:
    """Ours, with the settings `parley up` checked, so every child uses exactly those."""
    env = dict(os.environ)
    env.update(
        SLACK_BOT_TOKEN=settings.slack_bot_token or "",
        SLACK_APP_TOKEN=settings.slack_app_token or "",
        SLACK_API_URL=settings.slack_api_url,
        PARLEY_DATA_DIR=str(settings.parley_data_dir),
        PYTHONUNBUFFERED="1",
    )
    if settings.redis_url:
        env["REDIS_URL"] = settings.redis_url
    else:
        env.pop("REDIS_URL", None)
    return env


def run_up(settings: Settings) -> int:
    """Run the product against the workspace until Ctrl-C (exit 0) or a piece dies (exit 1)."""
    for name in ("slack_bot_token", "slack_app_token"):
        if not getattr(settings, name):
            raise ConfigError(f"{name.upper()} is not set: run `parley slack setup` first: it saves them in .env")
    try:
        identity = SlackApiCalls(settings.slack_api_url).bot_identity(settings.slack_bot_token or "")
    except TokenRefused as exc:
        refused = exc.about("token in SLACK_BOT_TOKEN")
        raise ConfigError(f"{refused}; `parley slack setup` checks and saves a new one") from None
    supervisor = Supervisor("up", _children_env(settings))

    def start() -> None:
        supervisor.spawn("serve", "serve", "--socket-mode", ready_line=SOCKET_MODE_READY, label="bot")
        supervisor.spawn("worker", "worker", "--name", f"parley-up-{os.getpid()}")
        supervisor.start_output()

    def connected() -> str | None:
        serve = supervisor.children[0]
        return supervisor.wait_until(serve.ready.is_set, "`parley serve --socket-mode` did not connect to Slack")

    def banner() -> None:
        redis_note = redacted(settings.redis_url or "") or f"embedded Redis in {settings.parley_data_dir}"
        print(f"Parley is up in the Slack workspace {identity.team} as @{identity.bot} ({redis_note}).", flush=True)
        print(f"In Slack, {TRY}. Ctrl-C stops everything.", flush=True)

    return supervisor.run(settings, start=start, ready=connected, banner=banner)
