"""Canonical JSON (RFC 8785) and the sha256 digests receipts are made of."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


def canonical(value: Any) -> bytes:
    """`value` as RFC 8785 canonical JSON bytes: one spelling for one value."""
    return rfc8785.dumps(value)


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
