"""Long hash values kept in pieces, so Redis keeps the hash compact with its defaults.

Redis stores a small hash as one listpack while every value is at most 64 bytes
(`hash-max-listpack-value`) and there are at most 128 fields. One longer value (a
question's request, its context) turns the whole hash into a hash table, which takes
about twice the bytes. Here such a value is written as `name#0`, `name#1`, ... of at most
64 bytes each, cut between characters, and read back whole. A field written whole (by an
earlier version, or rewritten since) wins over pieces. No setting or library does this.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from redis import Redis

from workers.store.replies import reply

PIECE = 64
"""Redis's default `hash-max-listpack-value`: the longest value a compact hash holds."""


def spread(name: str, value: str) -> dict[str, str]:
    """`value` as the field `name` when it fits, else as pieces `name#0`, `name#1`, ..."""
    raw = value.encode()
    if len(raw) <= PIECE:
        return {name: value}
    out: dict[str, str] = {}
    start = 0
    while start < len(raw):
        end = min(start + PIECE, len(raw))
        while end < len(raw) and raw[end] & 0xC0 == 0x80:  # never cut inside a UTF-8 character
            end -= 1
        out[f"{name}#{len(out)}"] = raw[start:end].decode()
        start = end
    return out


def gathered(data: Mapping[str, str], name: str) -> str | None:
    """The value of `name` in a decoded hash, whole or put together from its pieces; None when absent."""
    if name in data:
        return data[name]
    parts: list[str] = []
    while (part := data.get(f"{name}#{len(parts)}")) is not None:
        parts.append(part)
    return "".join(parts) if parts else None


READ_PIECES = 16
"""How many pieces `read_field` asks for at once: 1 KB, more than a conversation takes."""


def read_field(redis: Redis, key: str, name: str) -> str | None:
    """One field of a hash, whole or in pieces, in one command (an HGETALL past 16 pieces)."""
    names = [name, *(f"{name}#{i}" for i in range(READ_PIECES))]
    got = reply(redis.hmget(key, names))
    if got[-1] is not None:  # longer than READ_PIECES pieces: read the whole hash
        return gathered({_s(k): _s(v) for k, v in reply(redis.hgetall(key)).items()}, name)
    return gathered({n: _s(v) for n, v in zip(names, got, strict=True) if v is not None}, name)


def stale_pieces(name: str, written: Mapping[str, str]) -> list[str]:
    """The fields of `name` a rewrite as `written` must delete: the whole field or pieces past the new ones."""
    kept = set(written)
    return [n for n in (name, *(f"{name}#{i}" for i in range(READ_PIECES * 4))) if n not in kept]


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def compact(value: Any) -> str:
    """JSON without the spaces `json.dumps` puts after separators: a posted message's place
    (channel, ts, version) then fits in one compact hash value."""
    return json.dumps(value, separators=(",", ":"))
