"""Every MCP tool declares the shape of its result (`outputSchema`), and every result is checked against it.

MCP clients (the SDK's among them) validate a tool's `structuredContent` against the tool's
`outputSchema` and reject a result that does not match, so a result that drifted from its
schema would break the call on the client's side. `declare` builds a tool only with an output
schema (a JSON Schema object, checked when the module loads), and `OutputCheck` validates each
result before it is sent: a mismatch is the server's bug, logged and answered as an internal
error rather than sent on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from workers.exceptions import ParleyError
from workers.logs import Log

log = Log("parley.mcp")


class OutputSchemaError(ParleyError, ValueError):
    """A tool declared without a usable output schema (a bug in the tool's declaration)."""


def declare(name: str, description: str, input_schema: dict[str, Any], output_schema: Mapping[str, Any]) -> types.Tool:
    """A tool with its output schema, which must be a valid JSON Schema of an object (MCP requires `type: object`)."""
    schema = dict(output_schema)
    if schema.get("type") != "object":
        raise OutputSchemaError(f"tool {name!r}: its output schema must describe an object ('type': 'object')")
    Draft202012Validator.check_schema(schema)
    return types.Tool(name=name, description=description, input_schema=input_schema, output_schema=schema)


class OutputCheck:
    """The output schemas of a server's tools, compiled once; `check` validates one result."""

    def __init__(self, tools: Iterable[types.Tool]) -> None:
        self._validators: dict[str, Draft202012Validator] = {}
        for tool in tools:
            if tool.output_schema is None:
                raise OutputSchemaError(f"tool {tool.name!r} declares no output schema; declare it with declare()")
            self._validators[tool.name] = Draft202012Validator(tool.output_schema)

    def __contains__(self, name: object) -> bool:
        return name in self._validators

    def check(self, name: str, result: Any) -> None:
        """Raise `MCPError` (internal error) when `result` is not what tool `name` declares."""
        error = best_match(self._validators[name].iter_errors(result))
        if error is not None:
            where = "/".join(map(str, error.absolute_path)) or "result"
            log.error("tool result does not match its output schema", tool=name, at=where, error=error.message)
            raise MCPError(code=INTERNAL_ERROR, message=f"{name}: the result did not match its output schema")
