"""Parley: process entry points, composition roots, and its Python clients.

`parley.Parley` and `parley.AsyncParley` load `parley.client` on first use. So processes that
never call the API never import httpx for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from parley.client import AsyncParley, Parley

__all__ = ["AsyncParley", "Parley"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from parley import client

        return getattr(client, name)
    raise AttributeError(f"module 'parley' has no attribute {name!r}")
