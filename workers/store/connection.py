"""One way to reach Redis from a URL: plain, TLS, a unix socket, or a Sentinel's master.

Every Parley process gets its client from `connect`: the bot, the workers, RQ inside them, the
CLI. So `REDIS_URL` means the same thing everywhere:

- `redis://`, `rediss://` (TLS) and `unix://` are redis-py's own `from_url` forms. TLS options
  go in the query string. Examples are `ssl_ca_certs`, `ssl_certfile`, `ssl_keyfile` and
  `ssl_cert_reqs`.
- `redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db]` asks those
  Sentinels for the master of `service`. `?sentinel_password=` (and `sentinel_username=`)
  authenticate to the Sentinels themselves. redis-py has no URL form for Sentinel, so the
  parsing is ours. The connections are redis-py's `Sentinel.master_for`. Its pool asks the
  Sentinels for the master again on every new connection. So a client, and the RQ worker holding
  it, follows a failover without a restart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote

import redis
import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.sentinel import Sentinel, SentinelConnectionPool

SENTINEL_SCHEME = "redis+sentinel://"
SCHEMES = ("redis://", "rediss://", "unix://", SENTINEL_SCHEME)
SENTINEL_FORM = "redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db][?sentinel_password=...]"
_SENTINEL_QUERY = ("sentinel_password", "sentinel_username")
# Options that also apply to the connections to the Sentinels, so asking them where the master is fails as fast.
_SENTINEL_SOCKET_OPTIONS = ("socket_timeout", "socket_connect_timeout")


@dataclass(frozen=True)
class SentinelTarget:
    """What a `redis+sentinel://` URL names: the Sentinels, the service and the database."""

    sentinels: list[tuple[str, int]]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_username: str | None = None
    sentinel_password: str | None = field(default=None, repr=False)


def parse_sentinel_url(url: str) -> SentinelTarget:
    """Parse a `redis+sentinel://` URL.

    A ValueError says exactly what is wrong with it.
    """
    if not url.startswith(SENTINEL_SCHEME):
        raise ValueError(f"a Sentinel URL starts with {SENTINEL_SCHEME}")
    rest, _, query = url[len(SENTINEL_SCHEME) :].partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    if not at:
        hosts, userinfo = netloc, ""
    username, _, password = userinfo.partition(":")
    sentinels = [_host_port(part) for part in hosts.split(",")] if hosts else []
    if not sentinels:
        raise ValueError(f"names no Sentinel; the form is {SENTINEL_FORM}")
    parts = [p for p in path.split("/") if p]
    if not parts:
        raise ValueError(f"names no service (the master's name in Sentinel); the form is {SENTINEL_FORM}")
    if len(parts) > 2 or (len(parts) == 2 and not parts[1].isdigit()):
        raise ValueError(f"path must be /service or /service/db, not /{'/'.join(parts)}")
    options = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    unknown = sorted(set(options) - set(_SENTINEL_QUERY))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}; a Sentinel URL takes only {', '.join(_SENTINEL_QUERY)}")
    return SentinelTarget(
        sentinels=sentinels,
        service=unquote(parts[0]),
        db=int(parts[1]) if len(parts) == 2 else 0,
        username=unquote(username) or None,
        password=unquote(password) or None,
        sentinel_username=options.get("sentinel_username") or None,
        sentinel_password=options.get("sentinel_password") or None,
    )


def _host_port(part: str) -> tuple[str, int]:
    host, colon, port = part.strip().rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{part!r} is not host:port; every Sentinel needs its port (usually 26379)")
    return host.strip("[]"), int(port)


def check_url(url: str) -> None:
    """Raise ValueError unless `connect` takes `url`, without connecting."""
    if not url.startswith(SCHEMES):
        raise ValueError(f"must start with {', '.join(SCHEMES[:-1])} or {SCHEMES[-1]}")
    if url.startswith(SENTINEL_SCHEME):
        parse_sentinel_url(url)


def connect(url: str, **options: Any) -> redis.Redis:
    """A client for `url`, with redis-py connection `options`.

    Options are timeouts, retry and health checks.
    """
    if not url.startswith(SENTINEL_SCHEME):
        return redis.Redis.from_url(url, **options)
    target, sentinel_kwargs, auth = _sentinel_parts(url, options)
    sentinel = Sentinel(target.sentinels, sentinel_kwargs=sentinel_kwargs)
    client: redis.Redis = sentinel.master_for(target.service, db=target.db, **auth, **options)
    return client


def connect_async(url: str, **options: Any) -> aioredis.Redis:
    """An asyncio client for `url`, in every form `connect` takes.

    The long-polls' pub/sub uses it.
    """
    if not url.startswith(SENTINEL_SCHEME):
        client: aioredis.Redis = aioredis.Redis.from_url(url, **options)
        return client
    target, sentinel_kwargs, auth = _sentinel_parts(url, options)
    sentinel = AsyncSentinel(target.sentinels, sentinel_kwargs=sentinel_kwargs)
    master: aioredis.Redis = sentinel.master_for(target.service, db=target.db, **auth, **options)
    return master


def sibling(client: redis.Redis, *, max_connections: int, **overrides: Any) -> redis.Redis:
    """A client of the same server or Sentinel service, with its own small pool.

    `overrides` change its options.
    """
    pool = client.connection_pool
    kwargs = {k: v for k, v in pool.connection_kwargs.items() if k != "connection_pool"}
    kwargs.update(overrides)
    if isinstance(pool, SentinelConnectionPool):
        new_pool: redis.ConnectionPool = SentinelConnectionPool(
            pool.service_name,
            pool.sentinel_manager,
            connection_class=pool.connection_class,
            max_connections=max_connections,
            **kwargs,
        )
    else:
        new_pool = type(pool)(connection_class=pool.connection_class, max_connections=max_connections, **kwargs)
    return redis.Redis(connection_pool=new_pool)


def _sentinel_parts(url: str, options: dict[str, Any]) -> tuple[SentinelTarget, dict[str, Any], dict[str, Any]]:
    """A Sentinel `url`'s parts, the Sentinels' own options, and the master's auth."""
    target = parse_sentinel_url(url)
    sentinel_kwargs = {k: options[k] for k in _SENTINEL_SOCKET_OPTIONS if k in options}
    if target.sentinel_password:
        sentinel_kwargs["password"] = target.sentinel_password
    if target.sentinel_username:
        sentinel_kwargs["username"] = target.sentinel_username
    auth = {k: v for k, v in (("username", target.username), ("password", target.password)) if v}
    return target, sentinel_kwargs, auth
