"""The bench's own Redis database: where it is, and emptying it (never database 0).

Every measurement flushes the database between rounds, so the bench refuses database 0,
which the machine's other users are likeliest to share.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import redis

BENCH_DB = 14


def bench_redis_url(url: str | None = None, db: int = BENCH_DB) -> str:
    """`REDIS_URL` (or 127.0.0.1:6379) pointed at the bench's own database; never database 0."""
    if db == 0:
        raise SystemExit("bench: refusing to use Redis database 0; the bench flushes its database")
    parts = urlparse(url or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379")
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
