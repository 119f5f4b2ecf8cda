"""A tool call's arguments checked against the tool's input schema, before and after people approve it.

The MCP gateway asks nobody to approve a call the tool would refuse, and forwards no edit the
tool's schema refuses. The check is `workers.runtime.arg_schema`'s: patterns are left out and
remote `$ref`s never fetched, since an upstream's schema may come from anyone. The paths that
fail are safe to record; the values are not, so they are never returned.
"""

from __future__ import annotations

from typing import Any

from workers.runtime.arg_schema import SchemaUnusable, problems, said


def arguments_refused(name: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why `arguments` do not meet tool `name`'s input `schema`; None when they do."""
    try:
        found = problems(schema, arguments)
    except SchemaUnusable as exc:
        return f"{name}'s input schema cannot be checked ({exc}); nothing was forwarded"
    if not found:
        return None
    return f"{name}: the arguments do not meet the tool's input schema: {said(found)}"


def fields_refused(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """The argument paths that do not meet `schema`, without the values: safe to record."""
    try:
        return sorted(problems(schema, arguments))
    except SchemaUnusable:
        return ["(the input schema cannot be checked)"]
