"""Callers' patterns match in linear time: backtracking shapes finish, RE2-only syntax is refused by name.

Each check runs under a timer (`backtracking.within_deadline`), so that under a backtracking
matcher the test fails instead of hanging.
"""

from __future__ import annotations

import json

import pytest
from backtracking import BACKTRACKING, within_deadline
from pydantic import ValidationError

from workers.interaction.elicitation import ElicitationSchemaError, items_from_requested_schema
from workers.interaction.models import STORED, Item, Request
from workers.interaction.validation import check_value
from workers.json_schemas import linear_validator

pytestmark = pytest.mark.unit


def _free_text(pattern: str, default: str | None = None) -> Item:
    return Item(id="code", text="Code", type="free_text", pattern=pattern, default=default)


@pytest.mark.parametrize("pattern", BACKTRACKING)
@pytest.mark.parametrize("text", ["a" * 40, "a" * 40 + "!"])
def test_a_default_against_a_backtracking_pattern_is_decided_at_once(pattern: str, text: str) -> None:
    kind, got = within_deadline(lambda: _free_text(pattern, text).default)
    if pattern == r"(a?){28}a{28}" and text == "a" * 40:
        assert (kind, got) == ("ok", text)
    else:
        assert kind == "raised" and "item 'code': default is not a valid answer: does not match the pattern" in got


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_an_answer_against_a_backtracking_pattern_is_checked_at_once(pattern: str) -> None:
    item = _free_text(pattern)
    kind, got = within_deadline(lambda: check_value(item, "a" * 40 + "!"))
    assert (kind, got) == ("ok", f"does not match the pattern {pattern}")


@pytest.mark.parametrize(("pattern", "why"), [(r"(a+)\1", "invalid escape sequence"), (r"(?<!x)a", "perl operator")])
def test_a_backreference_or_lookaround_is_refused_naming_the_item(pattern: str, why: str) -> None:
    with pytest.raises(
        ValidationError, match=rf"item 'code': pattern is not a regular expression RE2 accepts: .*{why}"
    ):
        _free_text(pattern)


def test_an_elicitation_property_with_a_backreference_is_refused_by_name() -> None:
    with pytest.raises(ElicitationSchemaError) as caught:
        items_from_requested_schema(
            {"type": "object", "properties": {"ticket": {"type": "string", "pattern": r"(a)\1"}}}
        )
    [problem] = caught.value.problems
    assert problem.startswith("property 'ticket': ") and "RE2" in problem


def test_a_json_schema_pattern_matches_in_linear_time() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "pattern": r"^(a|a)*b$"}},
        "patternProperties": {r"^(x|x)*y$": {"type": "integer"}},
        "additionalProperties": False,
    }

    def problems() -> list[str]:
        check = linear_validator(schema)
        return [e.message for e in check.iter_errors({"name": "a" * 40, "x" * 40 + "y": "no", "x" * 40: 1})]

    kind, got = within_deadline(problems)
    assert kind == "ok"
    assert sorted(got) == sorted(
        [
            f"{'a' * 40!r} does not match '^(a|a)*b$'",
            "'no' is not of type 'integer'",
            f"Additional properties are not allowed ({'x' * 40!r} unexpected)",
        ]
    )


def test_a_json_schema_pattern_re2_cannot_compile_is_refused_by_place() -> None:
    with pytest.raises(ValueError, match=r"/properties/name: pattern '\(a\)\\\\1': invalid escape sequence"):
        linear_validator({"type": "object", "properties": {"name": {"type": "string", "pattern": r"(a)\1"}}})


def test_a_stored_question_whose_pattern_re2_refuses_stays_readable_and_refuses_answers() -> None:
    """Kept before patterns were RE2: read back as it was, and an answer is refused saying why."""
    item = {"id": "code", "text": "Code", "type": "free_text", "pattern": r"(?=A)\w+", "default": "Abc"}
    raw = json.dumps({"reason": "Code?", "items": [item]})
    with pytest.raises(ValidationError, match="RE2"):
        Request.model_validate_json(raw)
    stored = Request.model_validate_json(raw, context=STORED)
    problem = check_value(stored.items[0], "Abc")
    assert problem is not None and problem.startswith(r"the pattern (?=A)\w+ cannot be checked any more")
