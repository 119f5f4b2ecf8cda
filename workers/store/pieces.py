"""Long hash values kept in pieces, so Redis keeps the hash compact by default.

Redis keeps a small hash as one listpack while every value is at most 64 bytes. That is
`hash-max-listpack-value`, and it allows at most 128 fields. One longer value, like a question's
request or context, makes the hash a hash table. That takes about twice the bytes. Here such a
value is written as pieces `name#0`, `name#1`, ... of at most 64 bytes. They are cut between
characters and read back whole. A field written whole wins over pieces, as from an earlier
version or a rewrite. No setting or library does this.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from redis import Redis

from workers.store.replies import as_text, reply, text_hash

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
    """The value of `name` in a decoded hash, whole or from pieces, or None."""
    if name in data:
        return data[name]
    parts: list[str] = []
    while (part := data.get(f"{name}#{len(parts)}")) is not None:
        parts.append(part)
    return "".join(parts) if parts else None


READ_PIECES = 16
"""How many pieces `read_field` asks for at once: 1 KB, more than a conversation takes."""


def read_field(redis: Redis, key: str, name: str) -> str | None:
    """One hash field, whole or in pieces, in one command.

    Past 16 pieces, that command is an HGETALL.
    """
    return _field(redis, key, name, redis.hmget(key, _names(name)))


def read_fields(redis: Redis, hashes: list[str], name: str) -> list[str | None]:
    """The field `name` of each of `hashes`, whole or in pieces, in one round trip.

    A value past 16 pieces takes one more command (an HGETALL).
    """
    pipe = redis.pipeline(transaction=False)
    for key in hashes:
        pipe.hmget(key, _names(name))
    return [_field(redis, key, name, got) for key, got in zip(hashes, pipe.execute(), strict=True)]


def _names(name: str) -> list[str]:
    return [name, *(f"{name}#{i}" for i in range(READ_PIECES))]


def _field(redis: Redis, key: str, name: str, got: Any) -> str | None:
    """The field from HMGET's reply for `_names(name)`, reading the whole hash past them."""
    values = reply(got)
    if values[-1] is not None:  # longer than READ_PIECES pieces: read the whole hash
        return gathered(text_hash(reply(redis.hgetall(key))), name)
    return gathered({n: as_text(v) for n, v in zip(_names(name), values, strict=True) if v is not None}, name)


def stale_pieces(name: str, written: Mapping[str, str]) -> list[str]:
    """The fields of `name` a rewrite as `written` must delete.

    That is the whole field, or pieces past the new ones.
    """
    kept = set(written)
    return [n for n in (name, *(f"{name}#{i}" for i in range(READ_PIECES * 4))) if n not in kept]


def compact(value: Any) -> str:
    """JSON without the spaces `json.dumps` puts after separators.

    So a posted message's place (channel, ts, version) fits in one compact hash value.
    """
    return json.dumps(value, separators=(",", ":"))
