"""Canonical JSON (RFC 8785) and the sha256 digests receipts are made of."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import rfc8785

SAFE_INTEGER = 2**53 - 1
"""The largest integer an IEEE double, and so RFC 8785, holds exactly."""


def canonical(value: Any) -> bytes:
    """`value` as RFC 8785 canonical JSON bytes: one spelling for one value.

    RFC 8785 has no spelling for an integer beyond ±(2**53 - 1), a NaN or an infinity. RFC 7493
    (I-JSON) says to send such a number as a string, so it is stated as its decimal string. A lone
    surrogate is stated as U+FFFD. So a close always gets its receipt: a person may type
    100000000000000000, and a tool's arguments may hold a 64-bit id.
    """
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeError):
        return rfc8785.dumps(_stateable(value))


def _stateable(value: Any) -> Any:
    """`value` with what RFC 8785 cannot spell replaced as `canonical` says."""
    if isinstance(value, dict):
        return {_stateable(k): _stateable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_stateable(v) for v in value]
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > SAFE_INTEGER:
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return value if value.isascii() else "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    return value


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> dict[str, str]:
    """An in-toto digest set of `value`'s canonical JSON."""
    return {"sha256": sha256(canonical(value))}


def blocks_digest(blocks: list[Any]) -> str:
    """The sha256 of a host's posted Block Kit blocks, as the question's `shown_digest`.

    "" if they are not JSON.
    """
    plain = [b.to_dict() if hasattr(b, "to_dict") else b for b in blocks]
    try:
        return sha256(canonical(plain))
    except (TypeError, ValueError, rfc8785.CanonicalizationError):
        return ""
