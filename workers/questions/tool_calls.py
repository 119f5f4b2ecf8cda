"""A tool call's arguments checked against its input schema, before and after approval.

The MCP gateway asks nobody to approve a call the tool would refuse. It forwards no edit the
tool's schema refuses. The check is `workers.runtime.arg_schema`'s. Patterns are left out and
remote `$ref`s never fetched, since an upstream's schema may come from anyone. The failing paths
are safe to record. The values are not, so they are never returned.
"""

from __future__ import annotations

from typing import Any

from workers.runtime.arg_schema import SchemaUnusable, problems, said


def arguments_refused(name: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why `arguments` do not meet tool `name`'s input `schema`, or None."""
    try:
        found = problems(schema, arguments)
    except SchemaUnusable as exc:
        return f"{name}'s input schema cannot be checked ({exc}); nothing was forwarded"
    if not found:
        return None
    return f"{name}: the arguments do not meet the tool's input schema: {said(found)}"


def fields_refused(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """The argument paths failing `schema`, without values, so safe to record."""
    try:
        return sorted(problems(schema, arguments))
    except SchemaUnusable:
        return ["(the input schema cannot be checked)"]
