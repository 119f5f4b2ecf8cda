"""Items from JSON Schema: each property of an object schema as one `Item`.

`run.approve(schema=...)`, `run.ask_form(Model)` and MCP elicitation form schemas share this
mapping. So a field asks the same way in each (`workers.interaction.elicitation`). A choice is
an `enum`, with MCP's legacy `enumNames` as its labels. It may also be titled `oneOf`/`anyOf` of
`{const, title}`. An `array` of such choices is a multi-choice. A pydantic model is read through
its own `model_json_schema()`. That says all the mapping needs: formats, bounds, enums,
defaults, titles. So there is one mapping, not two.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from workers.interaction.exceptions import InteractionError
from workers.interaction.lengths import LABEL_MAX, PLACEHOLDER_MAX, TEXT_INPUT_MAX
from workers.interaction.models import ITEM_ID_PATTERN, Item, ItemType, Option

_FORMATS = {
    "email": ItemType.EMAIL,
    "uri": ItemType.URL,
    "date": ItemType.DATE,
    "time": ItemType.TIME,
    "date-time": ItemType.DATETIME,
    "password": ItemType.SECRET,
}


class FormError(InteractionError):
    """A schema or model field that no item can ask for; nothing was posted."""


def readable(name: str) -> str:
    """A field name as people read it: `max_replicas` -> "Max replicas"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ").split()
    text = " ".join(words)
    return text[:1].upper() + text[1:] if text else name


def schema_of(schema: dict[str, Any] | type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of an object: given as one, or a pydantic model's own."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    if isinstance(schema, dict):
        return schema
    raise FormError(f"schema must be a JSON Schema object or a pydantic model, not {type(schema).__name__}")


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _unwrap_optional(node: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """`anyOf: [X, null]` as `(X, True)`; any other node as `(node, False)`."""
    variants = node.get("anyOf")
    if not isinstance(variants, list):
        return node, False
    real = [v for v in variants if not (isinstance(v, dict) and v.get("type") == "null")]
    if len(real) == 1 and len(real) < len(variants) and isinstance(real[0], dict):
        return {**{k: v for k, v in node.items() if k != "anyOf"}, **real[0]}, True
    return node, False


def _options(values: Any) -> list[str] | None:
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return list(values)
    return None


def _titled(variants: Any) -> list[str | Option] | None:
    """JSON Schema's titled choices (`[{const, title}, ...]`) as options, else None."""
    if not isinstance(variants, list) or not variants:
        return None
    if not all(isinstance(v, dict) and isinstance(v.get("const"), str) for v in variants):
        return None
    return [Option(value=v["const"], label=str(v.get("title") or v["const"])) for v in variants]


def choices(node: dict[str, Any]) -> list[str | Option] | None:
    """The options a node offers, or None.

    Options come from `enum`, labelled by `enumNames` when it has one per value. They may also come
    from titled `oneOf`/`anyOf`.
    """
    plain = _options(node.get("enum"))
    if plain is not None:
        names = node.get("enumNames")
        if isinstance(names, list) and len(names) == len(plain) and all(isinstance(n, str) and n for n in names):
            return [Option(value=v, label=n) for v, n in zip(plain, names, strict=True)]
        return list(plain)
    return _titled(node.get("oneOf")) or _titled(node.get("anyOf"))


def _lengths(node: dict[str, Any]) -> tuple[int | None, int | None]:
    """A string's `minLength` and `maxLength` as a free-text item's bounds; None where there is none.

    `FormError` for a bound that is not a whole number 0 or more, a `maxLength` of 0 (nothing could
    be typed) or below `minLength`, and a `minLength` past Slack's text input. A `maxLength` past it
    is Slack's limit.
    """
    given: dict[str, int] = {}
    for key in ("minLength", "maxLength"):
        if key not in node:
            continue
        value = node[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON Schema's integers include 3.0
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise FormError(f"{key} must be a whole number of characters, 0 or more, not {value!r}")
        given[key] = value
    low, high = given.get("minLength"), given.get("maxLength")
    if high == 0:
        raise FormError("maxLength 0 leaves nothing to type; give at least 1, or leave it out")
    if low is not None and low > TEXT_INPUT_MAX:
        raise FormError(f"minLength {low} is over the {TEXT_INPUT_MAX} characters Slack's text input takes")
    if low is not None and high is not None and high < low:
        raise FormError(f"maxLength {high} is below minLength {low}; no answer could fit")
    return low or None, high if high is not None and high <= TEXT_INPUT_MAX else None


def field_item(name: str, node: dict[str, Any], defs: dict[str, Any], *, required: bool) -> Item | None:
    """The item asking for property `name` described by `node`.

    None when no item type fits it.
    """
    title = node.get("title")  # the field's own, before a referenced enum's title comes in
    node, nullable = _unwrap_optional(_resolve(node, defs))
    node = _resolve(node, defs)
    if not re.fullmatch(ITEM_ID_PATTERN, name):
        return None
    label = str(title or readable(name))[:LABEL_MAX]
    common: dict[str, Any] = {"id": name, "text": label, "required": required and not nullable}
    if isinstance(node.get("description"), str) and node["description"]:
        common["placeholder"] = node["description"][:PLACEHOLDER_MAX]
    if "default" in node and node["default"] is not None:
        common["default"] = node["default"]
        common["required"] = False
    kind = node.get("type")
    if "const" in node and isinstance(node["const"], str):
        return Item(type=ItemType.SELECT, options=[node["const"]], **common)
    if (options := choices(node)) is not None:
        return Item(type=ItemType.SELECT, options=options, **common)
    if kind == "array":
        inner = _resolve(node.get("items") or {}, defs)
        if (options := choices(inner)) is not None:
            return Item(type=ItemType.MULTI_SELECT, options=options, **common)
        return None
    if kind == "boolean":
        return Item(type=ItemType.BOOLEAN, **common)
    if kind in ("integer", "number"):
        low, high = node.get("minimum", node.get("exclusiveMinimum")), node.get("maximum", node.get("exclusiveMaximum"))
        return Item(type=ItemType.NUMBER, integer=kind == "integer", min=low, max=high, **common)
    if kind == "string":
        fmt = node.get("format")
        if fmt in _FORMATS:
            if _FORMATS[fmt] is ItemType.SECRET:
                common.pop("default", None)
            return Item(type=_FORMATS[fmt], **common)
        if fmt is not None:
            return None
        shortest, longest = _lengths(node)
        return Item(
            type=ItemType.FREE_TEXT,
            multiline=bool(node.get("multiline")),
            max_length=longest,
            min_length=shortest,
            pattern=node.get("pattern"),
            **common,
        )
    return None


def schema_items(schema: dict[str, Any], *, only: list[str] | None = None) -> dict[str, Item | None]:
    """Each property of an object schema (or those in `only`) as its item.

    None where no item fits.
    """
    props = schema.get("properties") or {}
    defs = schema.get("$defs") or {}
    needed = set(schema.get("required") or [])
    return {
        name: field_item(name, node, defs, required=name in needed) if isinstance(node, dict) else None
        for name, node in props.items()
        if only is None or name in only
    }
