"""Arguments checked against a tool's JSON Schema: what is refused, in words a person can act on,
patterns matched by RE2 or left out, and schemas refused rather than half-used."""

from __future__ import annotations

import threading

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from bot.playground import LoopbackServer
from workers.interaction import Answer
from workers.interaction.approval import approval_answers, approval_request
from workers.runtime.arg_schema import SchemaUnusable, edit_problems, problems

pytestmark = pytest.mark.unit

PAY = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 100},
        "account": {"type": "string", "maxLength": 12},
        "pattern": {"type": "string"},
    },
    "required": ["amount", "account"],
}


def test_each_broken_rule_is_named_by_its_field_without_echoing_the_value() -> None:
    assert problems(PAY, {"amount": 50, "account": "internal-7"}) == {}
    assert problems(PAY, {"amount": 0, "account": "x" * 13}) == {
        "amount": "must be more than 0",
        "account": "must be at most 12 characters long",
    }
    assert problems(PAY, {"amount": 5000}) == {"": "'account' is a required property", "amount": "must be at most 100"}


def test_patterns_are_matched_by_re2_and_one_it_cannot_compile_is_left_out() -> None:
    evil = {"type": "object", "properties": {"name": {"type": "string", "pattern": "(a|a)*b"}}}
    assert problems(evil, {"name": "a" * 40}) == {
        "name": "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' does not match '(a|a)*b'"
    }
    assert problems(evil, {"name": "aab"}) == {}
    lookahead = {"type": "object", "properties": {"name": {"type": "string", "pattern": "(?=x)y"}}}
    assert problems(lookahead, {"name": "z"}) == {}  # RE2 cannot match it, so it is not checked at all
    assert problems(PAY, {"amount": 1, "account": "a", "pattern": 3}) == {"pattern": "3 is not of type 'string'"}


def test_pattern_properties_are_matched_by_re2_or_left_out_with_what_they_cover() -> None:
    by_name = {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False}
    assert problems(by_name, {"xy": 1}) == {}
    assert problems(by_name, {"xy": "one"}) == {"xy": "'one' is not of type 'integer'"}
    assert problems(by_name, {"z": 1}) == {"": "Additional properties are not allowed ('z' unexpected)"}
    unmatchable = {
        "type": "object",
        "patternProperties": {"(?<=a)x": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert problems(unmatchable, {"z": "anything"}) == {}  # without its patterns, nothing counts as additional


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"$ref": "#"}, "refers to itself without end"),
        ({"type": "no-such-type"}, "not valid JSON Schema"),
    ],
)
def test_a_schema_that_cannot_be_used_says_so(schema: dict[str, object], why: str) -> None:
    with pytest.raises(SchemaUnusable, match=why):
        problems(schema, {"x": 1})


def test_a_ref_to_another_url_is_never_fetched() -> None:
    """jsonschema's default fetches a `$ref`'s URL, with no timeout: a caller's schema would make
    Parley GET an address inside its network. It cannot be followed instead, and nothing is asked."""
    asked: list[str] = []

    async def schema(request: Request) -> JSONResponse:
        asked.append(request.url.path)
        return JSONResponse({"type": "integer"}, media_type="application/schema+json")

    server = LoopbackServer(Starlette(routes=[Route("/s.json", schema)]))
    with server, pytest.raises(SchemaUnusable, match="cannot be followed"):
        problems({"properties": {"x": {"$ref": server.url + "/s.json"}}}, {"x": "one"})
    assert asked == []
    metaschema = {"$ref": "https://json-schema.org/draft/2020-12/schema"}  # known to jsonschema: followed
    assert problems(metaschema, {"type": 1}) != {}


def test_a_schema_whose_refs_branch_without_end_is_stopped_at_its_step_budget() -> None:
    """Each level is two refs to the next, and the last refuses: 2^16 paths from a schema of 2 KB.
    Unbounded it took about 20 s; at 10,000 steps it is refused. A real tool's schema is well within."""
    levels: dict[str, object] = {
        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(16)
    }
    levels["d16"] = {"type": "integer"}
    branching = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": levels}
    with pytest.raises(SchemaUnusable, match="more than 10000 steps"):
        problems(branching, {"x": "anything"})
    few = {**branching, "properties": {"x": {"$ref": "#/$defs/d10"}}}  # 2^6 paths: checked
    assert list(problems(few, {"x": "anything"})) == ["x"]
    assert problems(PAY, {"amount": 50, "account": "internal-7"}) == {}


@pytest.mark.parametrize("keyword", ["unevaluatedProperties", "unevaluatedItems"])
def test_the_walk_behind_unevaluated_keywords_is_stopped_at_the_budget_too(keyword: str) -> None:
    """jsonschema finds what `unevaluated*` may skip by walking `$ref`s without applying keywords.
    Forty levels of two ways to the next would take years; the check must end, refused, in a minute."""
    levels: dict[str, object] = {
        f"d{i}": {"$ref": f"#/$defs/d{i + 1}", "if": {}, "then": {"$ref": f"#/$defs/d{i + 1}"}} for i in range(40)
    }
    levels["d40"] = {}
    schema = {keyword: False, "$ref": "#/$defs/d0", "$defs": levels}
    ended: list[BaseException] = []

    def check() -> None:
        try:
            problems(schema, {"x": 1} if keyword == "unevaluatedProperties" else [1])
        except SchemaUnusable as exc:
            ended.append(exc)

    checking = threading.Thread(target=check, daemon=True)  # on a failure it spins on, never joined
    checking.start()
    checking.join(60)
    assert not checking.is_alive(), "the check did not end"
    assert [str(e) for e in ended] == ["the schema takes more than 10000 steps to check"]


def test_a_schema_nested_too_deep_is_not_walked() -> None:
    deep: dict[str, object] = {"type": "object"}
    for _ in range(200):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(SchemaUnusable, match="nested more than 64 levels"):
        problems(deep, {})


def test_only_an_edit_is_refused_and_approve_stays_exactly_the_proposal() -> None:
    request = approval_request("Pay", {"amount": 50, "account": "internal-7"}, schema=PAY)
    assert request.approval is not None and request.approval.input_schema == PAY
    edited = approval_answers(request, [Answer(id="amount", number=0)], approve=True)
    assert edit_problems(request, edited) == {"amount": "must be more than 0"}
    assert edit_problems(request, approval_answers(request, [Answer(id="amount", number=20)], approve=True)) == {}
    assert edit_problems(request, approval_answers(request, [Answer(id="amount", number=0)], approve=False)) == {}
    loose = approval_request("Pay", {"amount": 500, "account": "internal-7"}, schema=PAY)
    assert edit_problems(loose, approval_answers(loose, [], approve=True)) == {}  # not an edit: Approve is exact
