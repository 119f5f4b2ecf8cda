"""Arguments checked against a tool's JSON Schema (its `inputSchema`), as far as safe.

The schema may come from anyone, like an upstream MCP server or an API caller. So RE2 matches
its patterns, in linear time (`workers.json_schemas`). A pattern RE2 cannot compile is left out,
like a backreference or a lookaround. Refusing a real tool's whole schema for it would be worse.
A `$ref` to another URL is never fetched: it cannot be followed. A schema too deep to walk,
too costly to check (`MAX_STEPS`), or not valid JSON Schema is `SchemaUnusable`. It is never
half-used.
"""

from __future__ import annotations

from typing import Any

from jsonschema.exceptions import SchemaError, ValidationError
from referencing.exceptions import Unresolvable

from workers.interaction import Answer, Request
from workers.interaction.approval import decision_of
from workers.interaction.exceptions import ParleyError
from workers.interaction.patterns import problem
from workers.json_schemas import TooManySteps, linear_validator, step_budget

MAX_DEPTH = 64
MAX_STEPS = 10_000
"""Keyword steps one check may take: a few hundred for a real tool's arguments, 0.3 s at most."""
MAX_PROBLEMS = 5
MESSAGE_MAX = 200
_NAMED = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose keys are names chosen by the schema's author, not keywords."""
_VALUES = frozenset({"enum", "const", "default", "examples", "required"})


class SchemaUnusable(ParleyError, ValueError):
    """A schema that cannot be checked against.

    It is invalid, too deep, or has a `$ref` it cannot follow.
    """


def _safe(node: Any, depth: int = 0) -> Any:
    """`node` without the patterns RE2 cannot compile.

    Past `MAX_DEPTH`, it raises `SchemaUnusable`.
    """
    if depth > MAX_DEPTH:
        raise SchemaUnusable(f"the schema is nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, list):
        return [_safe(item, depth + 1) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    given = node.get("patternProperties")
    usable = isinstance(given, dict) and all(problem(p) is None for p in given)
    for key, value in node.items():
        if key == "pattern" and (not isinstance(value, str) or problem(value) is not None):
            continue
        if key == "patternProperties" and not usable:
            continue
        if key in _VALUES:
            out[key] = value
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {name: _safe(sub, depth + 1) for name, sub in value.items()}
        else:
            out[key] = _safe(value, depth + 1)
    if "patternProperties" in node and not usable:  # else the properties it covered would count as additional
        out.pop("additionalProperties", None)
        out.pop("unevaluatedProperties", None)
    elif usable:  # jsonschema would evaluate these beside patternProperties with `re`
        out.pop("unevaluatedProperties", None)
    return out


_SAID = {
    "exclusiveMinimum": "must be more than {}",
    "minimum": "must be at least {}",
    "exclusiveMaximum": "must be less than {}",
    "maximum": "must be at most {}",
    "multipleOf": "must be a multiple of {}",
    "minLength": "must be at least {} characters long",
    "maxLength": "must be at most {} characters long",
}


def _said(error: ValidationError) -> str:
    """What a person reads: the rule broken, without echoing the value.

    Otherwise jsonschema's own words.
    """
    bound = error.validator_value
    if isinstance(error.validator, str) and error.validator in _SAID and isinstance(bound, int | float):
        return _SAID[error.validator].format(int(bound) if float(bound).is_integer() else bound)
    message = error.message
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 1] + "…"


def _where(path: Any) -> str:
    return ".".join(str(part) for part in path)


def problems(schema: dict[str, Any], arguments: Any) -> dict[str, str]:
    """Each argument `schema` refuses, with why, by dotted path ("" for the whole)."""
    try:
        validator = linear_validator(_safe(schema))
        with step_budget(MAX_STEPS):
            found = sorted(
                validator.iter_errors(arguments), key=lambda e: (len(e.absolute_path), _where(e.absolute_path))
            )
    except SchemaError as exc:
        raise SchemaUnusable(f"the schema is not valid JSON Schema: {exc.message[:MESSAGE_MAX]}") from None
    except Unresolvable as exc:
        raise SchemaUnusable(f"the schema has a $ref that cannot be followed: {exc}") from None
    except TooManySteps:
        raise SchemaUnusable(f"the schema takes more than {MAX_STEPS} steps to check") from None
    except ValueError as exc:  # a pattern `_safe` kept that RE2 still refuses: not expected
        raise SchemaUnusable(f"the schema's patterns cannot be matched: {exc}") from None
    except RecursionError:
        raise SchemaUnusable("the schema refers to itself without end") from None
    out: dict[str, str] = {}
    for error in found:
        where = _where(error.absolute_path)
        if where not in out and len(out) < MAX_PROBLEMS:
            out[where] = _said(error)
    return out


def said(found: dict[str, str]) -> str:
    """`problems`' answer in one line, like "amount: 0 is less than or equal to the minimum of 0"."""
    return "; ".join(f"{where}: {why}" if where else why for where, why in found.items())


def edit_problems(request: Request, answers: list[Answer]) -> dict[str, str]:
    """What approved arguments break of `input_schema`, by the editable item to fix.

    Only arguments the person changed are named. They can fix those, and Approve stays exactly the
    proposal. Anything else is left to whoever forwards the arguments, which checks them again.
    Examples are a redacted value or an unusable schema.
    """
    approval = request.approval
    if approval is None or approval.input_schema is None:
        return {}
    decision = decision_of(request, {answer.id: answer.value for answer in answers})
    changed = {name for name, _, _ in decision.changes}
    if not decision.approved or not changed:
        return {}
    try:
        found = problems(approval.input_schema, decision.args)
    except SchemaUnusable:
        return {}
    out: dict[str, str] = {}
    for where, why in found.items():
        field = where.split(".", 1)[0]
        if field in changed and field not in out:
            out[field] = why
    return out
