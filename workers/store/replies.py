"""`reply`, `as_text` and `text_hash`: redis-py's replies narrowed once for the synchronous client.

redis-py types each command as `Awaitable[T] | T`. One set of command methods serves both its
sync and asyncio clients. The store holds only sync clients, which never return an awaitable. So
this narrowing is a cast, with no run-time check or cost.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar, cast

T = TypeVar("T")


def reply(value: Awaitable[T] | T) -> T:
    """`value`, a sync client's reply, as the type redis-py gives its sync form."""
    return cast(T, value)


def as_text(value: Any) -> str:
    """A reply value as text: bytes decoded, anything else as `str` gives it."""
    return value.decode() if isinstance(value, bytes) else str(value)


def text_hash(data: Any) -> dict[str, str]:
    """A hash's reply (HGETALL's dict) with its names and values as text."""
    return {as_text(k): as_text(v) for k, v in data.items()}
