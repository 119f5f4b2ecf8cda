"""The facts a person decides on, bound to their answer: canonical form, digest, changes.

An agent passes the JSON-able facts the answer is about to `run.ask(request, context={...})`. An
example is "deploy api v1.4.2 to prod-eu". They are checked here before anything is recorded or
shown. They are stored as canonical JSON (sorted keys, compact separators) with its sha256. On
replay they are compared with the facts the agent holds now. An answer given on other facts is
void. The question is then asked again, showing what changed field by field.
"""

from __future__ import annotations

import hashlib
import json
import math
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from workers.interaction.exceptions import ContextError

CONTEXT_MAX = 2000
"""The most characters a context may take in canonical JSON."""
DEPTH_MAX = 32
"""The most levels of objects and lists a context (or an API question's metadata) may nest."""

Context = dict[str, Any]


class ChangeKind(StrEnum):
    """How one top-level field differs between the answered ask and this one."""

    CHANGED = "changed"
    ADDED = "added"
    REMOVED = "removed"


class ContextChange(BaseModel):
    """One field whose value differs.

    `old` is None when the field was added, `new` when it was removed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: str
    kind: ChangeKind
    old: Any = None
    new: Any = None


def json_problem(value: Any, where: str) -> str | None:
    """Why `value` is not plain JSON, or None.

    Plain JSON is objects with text keys, lists, text, numbers, booleans and null.
    """
    if value is None or isinstance(value, bool | str | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value}, which JSON cannot hold"
    if isinstance(value, list | tuple):
        return next((p for n, v in enumerate(value) if (p := json_problem(v, f"{where}[{n}]"))), None)
    if isinstance(value, dict):
        for key, v in value.items():
            if not isinstance(key, str):
                return f"{where} has the key {key!r}, which is not text"
            if problem := json_problem(v, f"{where}.{key}"):
                return problem
        return None
    return f"{where} is a {type(value).__name__}, which is not JSON"


def too_deep(value: Any, limit: int = DEPTH_MAX) -> bool:
    """Whether `value` nests objects and lists deeper than `limit` levels.

    It is walked without recursion. A value nested thousands deep is measured, not a RecursionError.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def canonical(context: Any) -> str:
    """`context` as canonical JSON, or a `ContextError` saying why it cannot be one.

    A context is a JSON object of at most `CONTEXT_MAX` characters in this form. Sorted keys and
    compact separators give equal facts equal text, whatever their order.
    """
    if not isinstance(context, dict):
        raise ContextError(f"context must be a dict of facts, not a {type(context).__name__}")
    if too_deep(context):
        raise ContextError(f"context nests more than {DEPTH_MAX} levels of objects and lists")
    if problem := json_problem(context, "context"):
        raise ContextError(problem)
    text = canonical_form(context)
    if len(text) > CONTEXT_MAX:
        raise ContextError(
            f"context is {len(text):,} characters of canonical JSON, over the limit of {CONTEXT_MAX:,}; "
            "pass only the facts the person decides on"
        )
    return text


def canonical_form(context: Context) -> str:
    """A context already checked by `canonical` in that canonical form: sorted keys, compact separators."""
    return json.dumps(context, sort_keys=True, separators=(",", ":"), allow_nan=False)


def as_given(context: Context) -> str:
    """A checked context as compact JSON in the agent's field order, for showing."""
    return json.dumps(context, separators=(",", ":"), allow_nan=False)


def digest(canonical_json: str) -> str:
    """The sha256 (hex) of a context's canonical JSON, or "" without a context."""
    return hashlib.sha256(canonical_json.encode()).hexdigest() if canonical_json else ""


def changes(old: Context | None, new: Context | None) -> list[ContextChange]:
    """Each top-level field that differs between `old` and `new`.

    `new`'s fields come first in order, then those removed.
    """
    before, after = old or {}, new or {}
    found: list[ContextChange] = []
    for name in [*after, *(n for n in before if n not in after)]:
        if name not in after:
            found.append(ContextChange(field=name, kind=ChangeKind.REMOVED, old=before[name]))
        elif name not in before:
            found.append(ContextChange(field=name, kind=ChangeKind.ADDED, new=after[name]))
        elif _same(before[name], after[name]):
            continue
        else:
            found.append(ContextChange(field=name, kind=ChangeKind.CHANGED, old=before[name], new=after[name]))
    return found


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def show_value(value: Any) -> str:
    """A fact as people read it: text as is, anything else as compact JSON.

    Text keeps its characters: `••••`, never `\\u2022`.
    """
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=False)


def describe_change(change: ContextChange, arrow: str = "→") -> str:
    """One change as a line of plain text: `version: v1.4.2 → v1.4.3`, `(added)` or `(removed)`."""
    if change.kind is ChangeKind.ADDED:
        return f"{change.field}: (added) {show_value(change.new)}"
    if change.kind is ChangeKind.REMOVED:
        return f"{change.field}: {show_value(change.old)} (removed)"
    return f"{change.field}: {show_value(change.old)} {arrow} {show_value(change.new)}"
