"""Every MCP tool declares its result's shape (`outputSchema`), and each result is checked.

MCP clients, the SDK's among them, validate a tool's `structuredContent` against its
`outputSchema`. They reject a result that does not match. So a result that drifted from its
schema would break the call client-side. `declare` builds a tool only with an output schema.
That is a JSON Schema object, checked when the module loads. `OutputCheck` validates each result
before it is sent. A mismatch is the server's bug. It is logged and answered as an internal
error, not sent on.

Claude Code's permission prompt tool is the one exception (`text_only`). Claude Code reads its
answer from exactly one text block. Given `structuredContent` as well, it passes the model a
JSON string. Then it refuses the answer ("Expected a single text block param"). It also refuses
a tool declaring an `outputSchema` but returning no structured content. So that tool declares no
`outputSchema` and answers with one text block. Its JSON is still checked, against a schema kept
here and never published.
"""

from __future__ import annotations

import json
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
    """A tool declared without a usable output schema, a bug in its declaration."""


def declare(name: str, description: str, input_schema: dict[str, Any], output_schema: Mapping[str, Any]) -> types.Tool:
    """A tool with its output schema, a valid JSON Schema of an object.

    MCP requires `type: object`.
    """
    schema = _object_schema(name, output_schema)
    return types.Tool(name=name, description=description, input_schema=input_schema, output_schema=schema)


def _object_schema(name: str, output_schema: Mapping[str, Any]) -> dict[str, Any]:
    schema = dict(output_schema)
    if schema.get("type") != "object":
        raise OutputSchemaError(f"tool {name!r}: its output schema must describe an object ('type': 'object')")
    Draft202012Validator.check_schema(schema)
    return schema


class OutputCheck:
    """A server's tool output schemas, compiled once, with `check` validating one result.

    `text_only` names the tools answered as one text block alone, like Claude Code's permission
    prompt. It maps them to the schema their JSON is checked against. Such a tool declares no
    outputSchema.
    """

    def __init__(self, tools: Iterable[types.Tool], text_only: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._validators: dict[str, Draft202012Validator] = {}
        self._text_only = dict(text_only or {})
        for tool in tools:
            if tool.name in self._text_only:
                if tool.output_schema is not None:
                    raise OutputSchemaError(f"tool {tool.name!r} answers as text only: it declares no output schema")
                schema = _object_schema(tool.name, self._text_only[tool.name])
            elif tool.output_schema is None:
                raise OutputSchemaError(f"tool {tool.name!r} declares no output schema; declare it with declare()")
            else:
                schema = tool.output_schema
            self._validators[tool.name] = Draft202012Validator(schema)
        if missing := set(self._text_only) - set(self._validators):
            raise OutputSchemaError(f"text-only tools {sorted(missing)} are not among the server's tools")

    def __contains__(self, name: object) -> bool:
        return name in self._validators

    def check(self, name: str, result: Any) -> None:
        """Raise `MCPError` (internal error) when `result` is not what tool `name` declares."""
        error = best_match(self._validators[name].iter_errors(result))
        if error is not None:
            where = "/".join(map(str, error.absolute_path)) or "result"
            log.error("tool result does not match its output schema", tool=name, at=where, error=error.message)
            raise MCPError(code=INTERNAL_ERROR, message=f"{name}: the result did not match its output schema")

    def result(self, name: str, payload: dict[str, Any]) -> types.CallToolResult:
        """Tool `name`'s checked result: JSON as text, and as `structuredContent` unless text only."""
        self.check(name, payload)
        content: list[types.ContentBlock] = [types.TextContent(text=json.dumps(payload))]
        if name in self._text_only:
            return types.CallToolResult(content=content)
        return types.CallToolResult(content=content, structured_content=payload)
