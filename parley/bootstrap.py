"""Composition roots: what each Parley process wires together at start, and only then."""

from __future__ import annotations

import atexit
from pathlib import Path
from typing import Any

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from bot.terminal import TerminalHost
from parley.settings import Settings
from workers.exceptions import ConfigError
from workers.logs import redacted
from workers.questions.config import QuestionConfig, TemporalConfig
from workers.questions.config import install as install_questions
from workers.registry import RESTART, TRY_AGAIN, load_agents
from workers.runs import RunService
from workers.runtime.host import InteractorRouter
from workers.runtime.wiring import Runtime, RuntimeSettings, install
from workers.store import connection, embedded
from workers.store.away import AwayStore
from workers.store.drafts import Drafts
from workers.store.questions import QuestionStore


# The bot answers Slack within three seconds, so a command on its request path gives up fast:
# one retry (a connection that died with a restarted Redis is replaced), short socket timeouts.
# redis-py's default (three retries, backing off up to ten seconds) would outlast the ack.
def bot_redis_options() -> dict[str, Any]:
    return {
        "socket_connect_timeout": 0.5,
        "socket_timeout": 1.0,
        "retry": Retry(ExponentialBackoff(cap=0.2, base=0.05), 1),
    }


def connect_redis(settings: Settings, *, request_path: bool = False) -> redis.Redis:
    """The Redis at `REDIS_URL`, or the shared embedded server.

    `REDIS_URL` takes any form `workers.store.connection` does. `request_path`: the bot's client.
    Its commands fail within about two seconds when Redis is unreachable. So a listener can still
    ask the person to try again.
    """
    options: dict[str, Any] = {"health_check_interval": 30, **(bot_redis_options() if request_path else {})}
    if settings.redis_url:
        client = connection.connect(settings.redis_url, **options)
    else:
        sock = embedded.ensure_server(settings.parley_data_dir)
        holder = embedded.Holder(sock)
        atexit.register(holder.release)
        client = redis.Redis(unix_socket_path=str(sock), **options)
    try:
        client.ping()
    except redis.RedisError as exc:
        where = redacted(settings.redis_url) if settings.redis_url else "the embedded Redis"
        raise ConfigError(f"REDIS_URL: cannot reach {where}: {redacted(str(exc))}") from None
    except TypeError as exc:  # an option in the URL's query that redis-py's connections do not take
        raise ConfigError(f"REDIS_URL: {redacted(str(exc))}") from None
    return client


def usable_data_dir(settings: Settings) -> Path:
    """`PARLEY_DATA_DIR`, absolute and made if missing; one it cannot use is a `ConfigError`."""
    return embedded.make_data_dir(settings.parley_data_dir)


def runtime_settings(settings: Settings) -> RuntimeSettings:
    return RuntimeSettings(
        lease_ttl=settings.parley_lease_ttl,
        sweep_interval=settings.parley_sweep_interval,
        retry_delays=tuple(settings.parley_retry_delays),
        requeue_grace=settings.parley_requeue_grace,
        retention=settings.parley_retention,
        run_timeout=settings.parley_run_timeout,
        data_dir=settings.parley_data_dir,
        secret_key=settings.parley_secret_key.get_secret_value() if settings.parley_secret_key else None,
        min_replicas=settings.parley_redis_min_replicas,
        receipt_key=settings.receipt_key_pem(),
        receipt_retention=settings.parley_receipt_retention,
        receipt_trusted=settings.receipt_trusted_pem(),
    )


def build_runtime(
    settings: Settings, client: redis.Redis, hosts: InteractorRouter | None = None, *, restart: str = RESTART
) -> Runtime:
    """Load the agents, then build and install the runtime for job functions.

    `restart` says how to pick up a fixed agent module (`workers.registry.load_agents`).
    """
    registry = load_agents(settings.parley_agents, restart=restart)
    return install(Runtime.build(client, hosts=hosts, settings=runtime_settings(settings), registry=registry))


def build_runs(
    settings: Settings, client: redis.Redis, hosts: InteractorRouter | None = None, *, restart: str = RESTART
) -> RunService:
    """The runs door of a process needing no Slack: the command line or terminal."""
    return RunService(build_runtime(settings, client, hosts, restart=restart))


def terminal_runs(settings: Settings, host: TerminalHost) -> RunService:
    """The runs of a `parley run` process.

    Its host keeps drafts of half-answered questions in Redis.
    """
    client = connect_redis(settings)
    host.drafts = host.drafts or Drafts(client)
    return build_runs(settings, client, InteractorRouter({"terminal": host}), restart=TRY_AGAIN)


def away_store(client: redis.Redis) -> AwayStore:
    """Who is away and who answers for them, for `parley people`."""
    return AwayStore(client)


def token_store(client: redis.Redis) -> QuestionStore:
    """Where the API's tokens are kept, for the commands creating and revoking them."""
    return QuestionStore(client)


def question_config(settings: Settings) -> QuestionConfig:
    """The HTTP API's limits and webhook settings, installed for webhook jobs."""
    return install_questions(
        QuestionConfig(
            webhook_allow=tuple(settings.parley_webhook_allow),
            webhook_loopback=settings.parley_webhook_loopback,
            webhook_retry_intervals=tuple(settings.parley_webhook_retry_intervals),
            webhook_timeout=settings.parley_webhook_timeout,
            webhook_per_token=settings.parley_webhook_per_token,
            webhook_per_host=settings.parley_webhook_per_host,
            rate_limit=settings.parley_api_rate_limit,
            rate_window=settings.parley_api_rate_window,
            open_questions=settings.parley_api_open_questions,
            auth_failures=settings.parley_api_auth_failures,
            temporal=temporal_config(settings),
        )
    )


def temporal_config(settings: Settings) -> TemporalConfig:
    """Where workflows' outcomes are signalled, with the client certificate read once, here."""
    cert = key = None
    try:
        if settings.parley_temporal_tls_cert is not None and settings.parley_temporal_tls_key is not None:
            cert = settings.parley_temporal_tls_cert.read_bytes()
            key = settings.parley_temporal_tls_key.read_bytes()
    except OSError as exc:
        raise ConfigError(f"PARLEY_TEMPORAL_TLS_CERT/_KEY: cannot read {exc.filename}: {exc.strerror}") from None
    return TemporalConfig(
        address=settings.parley_temporal_address or "",
        namespace=settings.parley_temporal_namespace,
        tls_cert=cert,
        tls_key=key,
        retry_intervals=tuple(settings.parley_temporal_retry_intervals),
    )
