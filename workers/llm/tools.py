"""User-defined tools: Python functions the model may call, with JSON Schemas for their arguments.

The loop hands the model each tool's name, description and schema. When the model calls one, the
arguments are checked against the schema first. Arguments that do not fit never reach the
function. They come back to the model as an error listing every problem, so it can correct the
call. A function may raise `ToolError` for a problem the model should read, like "no such
customer". Any other exception is a bug or an outage, and propagates. The runtime then retries
or fails the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workers.exceptions import ConfigError, NotSerializable, ParleyError
from workers.interaction.tools import TOOL_NAME as ASK_USER

TOOL_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


class ToolError(ParleyError):
    """Raised by a tool to tell the model what went wrong, while the run goes on."""


def _validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for `schema`, with patterns in RE2.

    The draft is 2020-12 unless the schema says otherwise.
    """
    try:
        from workers.json_schemas import linear_validator
    except ImportError:  # pragma: no cover - depends on the installation
        raise ConfigError("checking tool arguments needs the jsonschema package: pip install jsonschema") from None
    return linear_validator(schema)


@dataclass(frozen=True)
class Tool:
    """A function the model may call: `fn(**arguments)` returns text or a JSON-able value.

    `parameters` is the JSON Schema of the arguments object. It is sent to the model as is.
    jsonschema checks it before `fn` runs.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    _check: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(TOOL_NAME_PATTERN, self.name):
            raise ValueError(f"tool name {self.name!r} must be 1-64 letters, digits, '_' or '-'")
        if self.name == ASK_USER:
            raise ValueError(f"{ASK_USER!r} is built into the loop; give your tool another name")
        if self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: parameters must be a JSON Schema with type 'object'")
        try:
            check = _validator(self.parameters)
        except ConfigError:
            raise
        except Exception as exc:
            raise ValueError(f"tool {self.name!r}: parameters is not a valid JSON Schema: {exc}") from exc
        object.__setattr__(self, "_check", check)

    def openai_tool(self) -> dict[str, Any]:
        """The definition in the OpenAI function-calling shape."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def problems(self, arguments: Any) -> list[str]:
        """One line per way `arguments` break the schema, empty when they fit."""
        errors = sorted(self._check.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
        return [f"{'/'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}" for e in errors]

    def call(self, arguments: str | dict[str, Any]) -> str:
        """Check `arguments` (a dict or JSON text), run the function, return the result text."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except (ValueError, RecursionError) as exc:
                return tool_error(self.name, [f"arguments are not valid JSON: {exc}"])
        problems = self.problems(arguments)
        if problems:
            return tool_error(self.name, problems)
        assert isinstance(arguments, dict)  # the schema's type is object
        try:
            result = self.fn(**arguments)
        except ToolError as exc:
            return f"error: {exc}"
        if isinstance(result, str):
            return result
        try:
            return json.dumps(result, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise NotSerializable(f"tool {self.name!r} returned a value that is not JSON: {exc}") from exc


def tool_error(name: str, problems: list[str]) -> str:
    """The tool result telling the model its call to `name` was refused.

    It has one line per problem.
    """
    lines = "\n".join(f"- {p}" for p in problems)
    return f"error: invalid arguments for {name}; nothing was done. Fix these and call {name} again:\n{lines}"
