"""`reply`: redis-py's reply types narrowed once for the synchronous client.

redis-py types each command as `Awaitable[T] | T` because one set of command methods serves both
its sync and asyncio clients. The store only holds sync clients, which never return an awaitable,
so this narrowing is a cast (no check at run time, no cost).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar, cast

T = TypeVar("T")


def reply(value: Awaitable[T] | T) -> T:
    """`value`, a synchronous client's reply, as the type redis-py gives its sync form."""
    return cast(T, value)
