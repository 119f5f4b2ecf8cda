"""MCP elicitation's form schema as Parley items, and the answers back as `content`.

MCP's `elicitation/create` (form mode, protocol 2025-11-25) asks for a flat object of primitive
properties:
- `string`, with `format` email, uri, date or date-time, or with `minLength`, `maxLength` and
  `pattern`
- `number` and `integer`, with `minimum` and `maximum`
- `boolean`
- a single choice: `enum`, or titled `oneOf: [{const, title}]`
- a multi-choice: an `array` of `enum`, or of titled `anyOf`
Each may have a `default`. `required` names the properties that must be given.

Three functions work with that subset:
- `items_from_requested_schema(schema)` checks a schema and returns one `Item` per property, in
  order. It uses the one JSON Schema mapping (`schema_items.field_item`). A string becomes
  free_text, or email, url, date or datetime by format. A number or integer becomes number, a
  boolean boolean, choices select or multi_select. Anything outside the subset raises
  `ElicitationSchemaError` with one line per property, naming it. Examples are a nested object,
  a secret, or an unknown type, format or keyword. Nothing is asked then.
- `content_from_answers(schema, answers)` turns answers by item id into the `content` of MCP's
  `ElicitResult`. Each value is typed as the schema says: an integer as `int`, a multi-choice as
  a list of strings. Unanswered properties are left out.
- `content_shape(schema)` is the least of a schema `content_from_answers` needs: each property's
  `type`. It is small enough to keep with a question and type its answers later.

`ask_human`'s `requested_schema` uses these. So can anything that forwards `elicitation/create`
to people and answers with their `content`. The port imports only stdlib and pydantic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from workers.interaction.models import ITEM_ID_PATTERN, MAX_ITEMS, AnswerValue, Item
from workers.interaction.schema_items import FormError, choices, field_item

FORMATS = ("email", "uri", "date", "date-time")
"""The string formats of the subset."""
SECRET_FORMATS = frozenset({"password", "secret", "token", "api-key", "apikey", "credential"})
_ANNOTATIONS = frozenset({"title", "description", "default", "$comment", "examples", "deprecated"})
_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"type", "format", "minLength", "maxLength", "pattern", "enum", "enumNames", "oneOf"}),
    "number": frozenset({"type", "minimum", "maximum"}),
    "integer": frozenset({"type", "minimum", "maximum"}),
    "boolean": frozenset({"type"}),
    "array": frozenset({"type", "items", "minItems", "maxItems", "uniqueItems"}),
}
_TOP = frozenset({"type", "properties", "required", "$schema", "title", "description", "additionalProperties"})
ContentValue = str | int | float | bool | list[str]
SECRET_REFUSED = "asks for a secret, which MCP elicitation forms must not carry"


class ElicitationSchemaError(FormError):
    """A requested schema outside MCP elicitation's form subset.

    `.problems` has one line per property.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("requested_schema: " + "; ".join(self.problems))


def _strings(values: Any) -> bool:
    return isinstance(values, list) and bool(values) and all(isinstance(v, str) for v in values)


def _titled(variants: Any) -> bool:
    return (
        isinstance(variants, list)
        and bool(variants)
        and all(
            isinstance(v, dict)
            and set(v) <= {"const", "title"}
            and isinstance(v.get("const"), str)
            and isinstance(v.get("title"), str)
            for v in variants
        )
    )


def _array_problem(node: dict[str, Any]) -> str | None:
    """Why an `array` property is not a multi-choice of the subset, or None."""
    inner = node.get("items")
    if not isinstance(inner, dict):
        return "an array must have `items`: {type: string, enum: [...]} or {anyOf: [{const, title}, ...]}"
    if "anyOf" in inner:
        if set(inner) - {"anyOf", "type"} or not _titled(inner["anyOf"]):
            return "`items.anyOf` must be a list of {const, title} strings"
    elif inner.get("type") != "string" or not _strings(inner.get("enum")) or set(inner) - {"type", "enum"}:
        if inner.get("type") in ("object", "array"):
            return "an array of objects or arrays is nested; MCP elicitation forms are flat"
        return "an array must be of {type: string, enum: [...]} or of {anyOf: [{const, title}, ...]}"
    offered = len(choices(inner) or [])
    low, high = node.get("minItems"), node.get("maxItems")
    if low is not None and (not isinstance(low, int) or isinstance(low, bool) or low > 1):
        return f"minItems {low!r}: a multi-choice asks for at least one choice when required, at most that"
    if high is not None and (not isinstance(high, int) or isinstance(high, bool) or high < offered):
        return f"maxItems {high!r}: a multi-choice cannot limit how many of its {offered} options are chosen"
    return None


def property_problem(name: str, node: Any) -> str | None:
    """Why property `name` (schema `node`) is outside the form subset, or None."""
    if not re.fullmatch(ITEM_ID_PATTERN, name):
        return "a property name must be 1-64 letters, digits, '_' or '-'"
    if not isinstance(node, dict):
        return "a property's schema must be an object"
    if node.get("writeOnly") is True or str(node.get("format", "")).lower() in SECRET_FORMATS:
        return SECRET_REFUSED
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        return "a nested object; MCP elicitation forms are flat (string, number, integer, boolean, enum, array)"
    if not isinstance(kind, str) or kind not in _KEYWORDS:
        return f"type {kind!r} is outside the subset (string, number, integer, boolean, or array of choices)"
    unknown = sorted(set(node) - _KEYWORDS[kind] - _ANNOTATIONS)
    if unknown:
        return f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} outside the subset for a {kind}"
    if kind == "array":
        return _array_problem(node)
    if kind != "string":
        return None
    fmt = node.get("format")
    if fmt is not None and fmt not in FORMATS:
        return f"format {fmt!r} is outside the subset ({', '.join(FORMATS)})"
    if fmt is not None and (given := [k for k in ("minLength", "maxLength", "pattern") if k in node]):
        return f"{', '.join(given)} cannot be checked on a string of format {fmt!r}"
    if ("enum" in node or "enumNames" in node) and not _strings(node.get("enum")):
        return "enum must be a list of strings"
    if "oneOf" in node and not _titled(node["oneOf"]):
        return "oneOf must be a list of {const, title} strings"
    if "pattern" in node and not isinstance(node["pattern"], str):
        return "pattern must be a regular expression"
    return None


def _whole(pattern: str) -> str:
    """JSON Schema's `pattern` rewritten to match the whole answer, as an item's does.

    A JSON Schema pattern matches anywhere in the text.
    """
    head = "" if pattern.startswith("^") else "(?s:.*?)"
    tail = "" if pattern.endswith("$") and not pattern.endswith("\\$") else "(?s:.*)"
    return pattern if not head and not tail else f"{head}(?:{pattern}){tail}"


def _item(name: str, node: dict[str, Any], required: bool) -> Item:
    pattern = node.get("pattern")
    asked = {**node, "pattern": _whole(pattern)} if isinstance(pattern, str) else node
    item = field_item(name, asked, {}, required=required)
    if item is None:  # every node past `property_problem` has an item type
        raise FormError(f"no item type asks for {node!r}")
    if isinstance(pattern, str) and item.pattern != pattern and len(pattern) < 140:
        item = Item.model_validate({**item.model_dump(), "pattern_hint": f"text matching {pattern}"})
    return item


def items_from_requested_schema(schema: Any) -> list[Item]:
    """One item per property of an MCP elicitation form schema, in order.

    `ElicitationSchemaError` names each property outside the subset, and the schema's own problems.
    """
    if not isinstance(schema, dict):
        raise ElicitationSchemaError(["must be a JSON Schema object: {type: object, properties: {...}}"])
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append(f"type must be 'object', not {schema.get('type')!r}")
    problems += [f"{k} is outside MCP elicitation's form subset" for k in sorted(set(schema) - _TOP)]
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        raise ElicitationSchemaError([*problems, "properties must name at least one property"])
    if len(props) > MAX_ITEMS:
        problems.append(f"at most {MAX_ITEMS} properties are asked in one form, not {len(props)}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        problems.append("required must be a list of property names")
        required = []
    problems += [f"required names {r!r}, which is not a property" for r in required if r not in props]
    items: list[Item] = []
    for name, node in props.items():
        problem = property_problem(str(name), node)
        if problem is None:
            try:
                items.append(_item(name, node, name in required))
                continue
            except ValidationError as exc:
                problem = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            except FormError as exc:
                problem = str(exc)
        problems.append(f"property {name!r}: {problem}")
    if problems:
        raise ElicitationSchemaError(problems)
    return items


def content_shape(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` reduced to what `content_from_answers` reads: `{type: object, properties: {name: {type}}}`."""
    props = schema.get("properties") or {}
    return {
        "type": "object",
        "properties": {str(n): {"type": node.get("type")} for n, node in props.items() if isinstance(node, dict)},
    }


def _typed(kind: Any, value: AnswerValue) -> ContentValue | None:
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value) if float(value).is_integer() else None
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "array" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if kind == "string" and isinstance(value, str):
        return value
    return None


def content_from_answers(schema: Mapping[str, Any], answers: Mapping[str, AnswerValue]) -> dict[str, ContentValue]:
    """The `content` of an accepted elicitation, each value typed as `schema` says.

    `answers` is by item id, as a question's answers are. Unanswered properties are left out.
    `FormError` when an answer is not of its property's type, as with another form's answers.
    """
    content: dict[str, ContentValue] = {}
    for name, node in (schema.get("properties") or {}).items():
        value = answers.get(name)
        if value is None or value == []:
            continue
        kind = node.get("type") if isinstance(node, dict) else None
        typed = _typed(kind, value)
        if typed is None:
            raise FormError(f"property {name!r}: the answer {value!r} is not of type {kind!r}")
        content[name] = typed
    return content
