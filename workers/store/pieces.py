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


def pieces_of(data: Mapping[str, str], name: str) -> list[str]:
    """The piece fields of `name` present in a decoded hash (to delete them with it)."""
    return [k for k in data if k.startswith(f"{name}#") and k[len(name) + 1 :].isdigit()]


def compact(value: Any) -> str:
    """JSON without the spaces `json.dumps` puts after separators: a posted message's place
    (channel, ts, version) then fits in one compact hash value."""
    return json.dumps(value, separators=(",", ":"))
