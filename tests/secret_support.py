"""Looking for a secret everywhere it must not be: every value in the Redis database, every log
line, every Web API body the stand-in recorded."""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis

from workers.logs import JsonFormatter


def _unpacked(value: bytes) -> list[bytes]:
    """`value`, and what it holds when it is zlib-compressed (RQ compresses a job's data)."""
    try:
        return [value, zlib.decompress(value)]
    except zlib.error:
        return [value]


def redis_values(r: redis.Redis) -> dict[bytes, list[bytes]]:
    """Every key of the database with every value it holds, read by its type (SCAN, never KEYS)."""
    found: dict[bytes, list[bytes]] = {}
    for key in r.scan_iter("*", count=500):
        kind = r.type(key).decode()
        if kind == "string":
            raw = [r.get(key) or b""]
        elif kind == "hash":
            raw = [x for kv in r.hgetall(key).items() for x in kv]
        elif kind == "list":
            raw = list(r.lrange(key, 0, -1))
        elif kind == "set":
            raw = list(r.smembers(key))
        elif kind == "zset":
            raw = [m for m, _ in r.zrange(key, 0, -1, withscores=True)]
        elif kind == "stream":
            raw = [x for _, fields in r.xrange(key) for kv in fields.items() for x in kv]
        elif kind == "none":  # gone since the scan (an RQ worker's key, say): it holds nothing now
            continue
        else:
            raise AssertionError(f"{key!r} is a {kind}, which this search cannot read")
        found[key] = [key] + [u for v in raw for u in _unpacked(v)]
    return found


def keys_holding(r: redis.Redis, needle: str) -> list[bytes]:
    """The keys whose name or any value contains `needle`."""
    return sorted(k for k, values in redis_values(r).items() if any(needle.encode() in v for v in values))


class CapturedLogs(logging.Handler):
    """Every log record of the process, at every level, as the JSON line Parley would write."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self._json = JsonFormatter()

    def emit(self, record: logging.LogRecord) -> None:
        line = self._json.format(record)
        self.lines.append(f"{line} {record.getMessage()} {record.__dict__!r}")

    def holding(self, needle: str) -> list[str]:
        return [line for line in self.lines if needle in line]


@contextmanager
def captured_logs() -> Iterator[CapturedLogs]:
    """Capture every log record (DEBUG and up, every logger) while the block runs."""
    root = logging.getLogger()
    handler, level = CapturedLogs(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def bodies_holding(calls: list[dict[str, Any]], needle: str) -> list[str]:
    """The Web API calls (method names) whose arguments contain `needle`."""
    return [c["method"] for c in calls if needle in json.dumps(c, ensure_ascii=False)]
