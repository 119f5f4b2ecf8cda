"""MCP elicitation's form schema as items (`items_from_requested_schema`), refusals naming the
property, and answers back as typed `content` (`content_from_answers`)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from workers.interaction import FormError, ItemType
from workers.interaction.elicitation import (
    ElicitationSchemaError,
    content_from_answers,
    content_shape,
    items_from_requested_schema,
)
from workers.interaction.validation import check_value

pytestmark = pytest.mark.unit


def one(node: dict[str, Any], *, required: bool = False) -> Any:
    schema = {"type": "object", "properties": {"x": node}, "required": ["x"] if required else []}
    [item] = items_from_requested_schema(schema)
    return item


def refusal(node: Any, name: str = "x") -> str:
    with pytest.raises(ElicitationSchemaError) as caught:
        items_from_requested_schema({"type": "object", "properties": {name: node}})
    [problem] = caught.value.problems
    assert problem.startswith(f"property {name!r}: "), problem
    return problem


def test_each_type_of_the_subset_maps_to_its_item() -> None:
    assert one({"type": "string"}).type is ItemType.FREE_TEXT
    text = one({"type": "string", "title": "Ticket", "minLength": 3, "maxLength": 9, "description": "e.g. OPS-1"})
    assert (text.text, text.min_length, text.max_length, text.placeholder) == ("Ticket", 3, 9, "e.g. OPS-1")
    formats = {"email": ItemType.EMAIL, "uri": ItemType.URL, "date": ItemType.DATE, "date-time": ItemType.DATETIME}
    for fmt, kind in formats.items():
        assert one({"type": "string", "format": fmt}).type is kind
    number = one({"type": "number", "minimum": 0.5, "maximum": 2})
    assert (number.type, number.min, number.max, number.integer) == (ItemType.NUMBER, 0.5, 2, False)
    assert one({"type": "integer", "minimum": 1}).integer is True
    assert one({"type": "boolean"}).type is ItemType.BOOLEAN
    plain = one({"type": "string", "enum": ["s", "l"]})
    assert (plain.type, plain.option_values()) == (ItemType.SELECT, ["s", "l"])
    titled = one({"type": "string", "oneOf": [{"const": "g", "title": "Gold"}, {"const": "f", "title": "Free"}]})
    assert [(o.value, o.label) for o in titled.options] == [("g", "Gold"), ("f", "Free")]
    legacy = one({"type": "string", "enum": ["g", "f"], "enumNames": ["Gold", "Free"]})
    assert [o.label for o in legacy.options] == ["Gold", "Free"]
    many = one({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2})
    assert (many.type, many.option_values()) == (ItemType.MULTI_SELECT, ["a", "b"])
    many_titled = one({"type": "array", "items": {"anyOf": [{"const": "a", "title": "Alpha"}]}, "minItems": 1})
    assert [o.label for o in many_titled.options] == ["Alpha"]


def test_required_and_defaults() -> None:
    assert one({"type": "string"}, required=True).required is True
    assert one({"type": "string"}).required is False
    defaulted = one({"type": "integer", "default": 3}, required=True)
    assert (defaulted.default, defaulted.required) == (3, False)  # pre-filled instead
    assert one({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["b"]}).default == ["b"]


def test_a_pattern_is_found_anywhere_unless_anchored_as_json_schema_says() -> None:
    loose = one({"type": "string", "pattern": "[0-9]{3}"})
    assert check_value(loose, "ticket 123 here") is None and check_value(loose, "12") is not None
    assert loose.pattern_hint == "text matching [0-9]{3}"
    anchored = one({"type": "string", "pattern": "^[A-Z]+$"})
    assert anchored.pattern == "^[A-Z]+$" and check_value(anchored, "ABC") is None
    assert check_value(anchored, "ABC1") == "does not match the pattern ^[A-Z]+$"


@pytest.mark.parametrize(
    ("node", "says"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}}, "a nested object"),
        ({"type": "string", "format": "password"}, "asks for a secret"),
        ({"type": "string", "writeOnly": True}, "asks for a secret"),
        ({"type": "null"}, "type 'null' is outside the subset"),
        ({"enum": ["a"]}, "type None is outside the subset"),
        ({"type": "string", "format": "ipv4"}, "format 'ipv4' is outside the subset (email, uri, date, date-time)"),
        ({"type": "number", "exclusiveMinimum": 0}, "exclusiveMinimum is outside the subset for a number"),
        ({"type": "string", "format": "email", "maxLength": 9}, "maxLength cannot be checked on a string of format"),
        ({"type": "string", "enum": [1, 2]}, "enum must be a list of strings"),
        ({"type": "string", "oneOf": [{"const": "a"}]}, "oneOf must be a list of {const, title} strings"),
        ({"type": "array", "items": {"type": "object"}}, "an array of objects or arrays is nested"),
        ({"type": "array", "items": {"type": "string"}}, "an array must be of {type: string, enum: [...]}"),
        ({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 2}, "minItems 2"),
        ({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1}, "maxItems 1"),
        ({"type": "integer", "minimum": 0.5}, "an integer item's min and max must be whole numbers"),
        ({"type": "string", "pattern": r"(\w+)\1"}, "pattern is not a regular expression RE2 accepts"),
        ({"type": "boolean", "default": "yes"}, "default"),
    ],
)
def test_outside_the_subset_is_refused_naming_the_property(node: dict[str, Any], says: str) -> None:
    assert says in refusal(node)


def test_the_schema_itself_is_checked_and_every_problem_listed() -> None:
    with pytest.raises(ElicitationSchemaError) as caught:
        items_from_requested_schema({"type": "array", "properties": {}})
    assert caught.value.problems == ["type must be 'object', not 'array'", "properties must name at least one property"]
    eleven = {f"p{n}": {"type": "boolean"} for n in range(11)}
    with pytest.raises(ElicitationSchemaError) as caught:
        items_from_requested_schema({"type": "object", "properties": eleven, "required": ["nope"], "$defs": {}})
    assert caught.value.problems == [
        "$defs is outside MCP elicitation's form subset",
        "at most 10 properties are asked in one form, not 11",
        "required names 'nope', which is not a property",
    ]
    assert "a property name must be" in refusal({"type": "string"}, name="first name")
    with pytest.raises(ElicitationSchemaError, match="must be a JSON Schema object"):
        items_from_requested_schema("not a schema")
    assert isinstance(caught.value, FormError)


def test_content_is_typed_as_the_schema_says() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "r": {"type": "number"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a"]}},
            "s": {"type": "string", "format": "date"},
            "skipped": {"type": "string"},
        },
    }
    answers = {"n": 3.0, "r": 2, "ok": False, "tags": ["a"], "s": "2026-12-24", "skipped": None}
    content = content_from_answers(schema, answers)
    assert content == {"n": 3, "r": 2, "ok": False, "tags": ["a"], "s": "2026-12-24"}
    assert type(content["n"]) is int
    assert content_from_answers(content_shape(schema), answers) == content  # the shape is all it needs
    assert content_shape(schema)["properties"]["tags"] == {"type": "array"}
    with pytest.raises(FormError, match=re.escape("property 'n': the answer 'three' is not of type 'integer'")):
        content_from_answers(schema, {"n": "three"})
