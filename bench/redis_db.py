"""The bench's own Redis database: where it is, and emptying it (never database 0).

Every measurement flushes the database between rounds, so the bench uses a database of a
shared server only when the user named it (`--db N`, or a URL ending `/N`), and never
database 0. Named no server, it starts the embedded Redis in a folder of its own.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import redis

from workers.store import embedded

BENCH_DB = 14
_held: list[embedded.Holder] = []


def bench_data_dir() -> Path:
    """The embedded Redis's folder for the bench, apart from the playground's data."""
    return embedded.default_data_dir() / "bench-redis"


def named_db(url: str) -> int | None:
    """The database a Redis URL names (`/N`, or `?db=N` for a socket), or None."""
    parts = urlparse(url)
    if parts.scheme == "unix":
        found = parse_qs(parts.query).get("db")
        return int(found[0]) if found else None
    path = parts.path.strip("/")
    return int(path) if path.isdigit() else None


def bench_redis_url(url: str | None = None, db: int | None = None) -> str:
    """The Redis URL the bench flushes: one the user named, or the embedded Redis's (database 14)."""
    given = url or os.environ.get("REDIS_URL")
    if not given:
        sock = embedded.ensure_server(bench_data_dir())
        if not _held:
            _held.append(embedded.Holder(sock))  # kept while the bench runs, so nothing reaps it
        db = BENCH_DB if db is None else db
        if db == 0:
            raise SystemExit("bench: refusing to use Redis database 0; the bench flushes its database")
        return f"unix://{sock}?db={db}"
    if db is None:
        db = named_db(given)
        if db is None:
            raise SystemExit(
                "bench: it empties the database it uses; name one it may flush: --db N or a URL ending /N "
                "(or unset REDIS_URL and --redis-url for the embedded Redis)"
            )
    if db == 0:
        raise SystemExit("bench: refusing to use Redis database 0; the bench flushes its database")
    parts = urlparse(given)
    if parts.scheme == "unix":
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query["db"] = str(db)
        return urlunparse(parts._replace(query=urlencode(query)))
    return urlunparse(parts._replace(path=f"/{db}"))


def connect(url: str) -> redis.Redis:
    client = redis.Redis.from_url(url)
    client.ping()
    return client


def flush(client: redis.Redis) -> None:
    """Empty the bench's database (and only it)."""
    db = int(client.connection_pool.connection_kwargs.get("db", 0))
    if db == 0:
        raise RuntimeError("refusing to flush Redis database 0")
    client.flushdb()
