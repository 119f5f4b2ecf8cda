"""Composition roots: what each Parley process wires together at start, and only then."""

from __future__ import annotations

import atexit

import redis

from parley.settings import Settings
from workers.exceptions import ConfigError
from workers.registry import load_agents
from workers.runtime.host import HostRouter
from workers.runtime.wiring import Runtime, RuntimeSettings, install
from workers.store import embedded


def connect_redis(settings: Settings) -> redis.Redis:
    """The Redis at `REDIS_URL`, or the shared embedded server when it is unset."""
    if settings.redis_url:
        client = redis.Redis.from_url(settings.redis_url, health_check_interval=30)
    else:
        sock = embedded.ensure_server(settings.parley_data_dir)
        holder = embedded.Holder(sock)
        atexit.register(holder.release)
        client = redis.Redis(unix_socket_path=str(sock), health_check_interval=30)
    try:
        client.ping()
    except redis.RedisError as exc:
        where = settings.redis_url or "the embedded Redis"
        raise ConfigError(f"REDIS_URL: cannot reach {where}: {exc}") from None
    return client


def runtime_settings(settings: Settings) -> RuntimeSettings:
    return RuntimeSettings(
        lease_ttl=settings.parley_lease_ttl,
        sweep_interval=settings.parley_sweep_interval,
        retry_delays=tuple(settings.parley_retry_delays),
        requeue_grace=settings.parley_requeue_grace,
        data_dir=settings.parley_data_dir,
    )


def build_runtime(settings: Settings, client: redis.Redis, hosts: HostRouter | None = None) -> Runtime:
    """Load the agents, build the runtime, and install it for this process's job functions."""
    registry = load_agents(settings.parley_agents)
    return install(Runtime.build(client, hosts=hosts, settings=runtime_settings(settings), registry=registry))
