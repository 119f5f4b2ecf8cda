"""Requests an agent may build only when every host can show them and take their answers back.

Text people read must show something, and a number default or bound must be one a person can
type back. Either mistake is refused when the request is built, naming where it is, before
anything is asked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from workers.interaction import Answer, AnswerError, Item, Option, Request
from workers.interaction.models import STORED
from workers.interaction.validation import NUMBER_TEXT_MAX

pytestmark = pytest.mark.unit

BLANKS = (" ", "\n\n", "\t \u00a0", "\u200b", " \u2060\u3000 ")
"""Text that shows nothing: spaces, line breaks, a no-break space, zero-width and ideographic spaces."""


def _select(**item: Any) -> dict[str, Any]:
    return {"id": "env", "text": "Environment", "type": "select", "options": ["staging", "production"], **item}


def _refused(request: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        Request.model_validate(request)
    return str(caught.value)


@pytest.mark.parametrize("blank", BLANKS)
def test_required_text_that_shows_nothing_is_refused_where_it_is(blank: str) -> None:
    cases = {
        "reason": {"reason": blank, "items": [_select()]},
        "items.0.text": {"reason": "Deploy", "items": [_select(text=blank)]},
        "items.0.options.1.label": {"reason": "Deploy", "items": [_select(options=["staging", blank])]},
        "items.0.options.0.label": {
            "reason": "Deploy",
            "items": [_select(options=[{"value": "stg", "label": blank}, "production"])],
        },
        "items.0.pattern_hint": {
            "reason": "Deploy",
            "items": [
                {"id": "t", "text": "Ticket", "type": "free_text", "pattern": "[A-Z]+-[0-9]+", "pattern_hint": blank}
            ],
        },
    }
    for where, request in cases.items():
        refusal = _refused(request)
        assert where in refusal and "shows nothing" in refusal, (where, refusal)


@pytest.mark.parametrize("blank", BLANKS)
def test_optional_text_that_shows_nothing_is_not_given(blank: str) -> None:
    option = Option(value="stg", label="Staging", description=blank)
    item = Item(id="note", text="Note", type="free_text", placeholder=blank)
    assert option.description is None and item.placeholder is None


def test_text_with_something_to_read_is_kept_as_written() -> None:
    request = Request(reason=" Deploy?\n", items=[_select(text="\u200bEnvironment", options=[" a ", "🚀"])])
    assert request.reason == " Deploy?\n"
    assert request.items[0].text == "\u200bEnvironment"
    assert request.items[0].option_values() == [" a ", "🚀"]


def test_a_stored_request_with_blank_text_still_reads_back() -> None:
    raw = '{"reason":" ","items":[{"id":"c","text":" ","type":"select","options":[" ","b"]}]}'
    stored = Request.model_validate_json(raw, context=STORED)
    assert stored.reason == " " and stored.items[0].option_values() == [" ", "b"]


def test_a_stored_blank_placeholder_is_kept_as_written() -> None:
    """Its digest stays the one a receipt signed; a new request drops it."""
    raw = '{"reason":"Why","items":[{"id":"t","text":"Text","type":"free_text","placeholder":" "}]}'
    assert Request.model_validate_json(raw, context=STORED).items[0].placeholder == " "
    assert Request.model_validate_json(raw).items[0].placeholder is None


TOO_LONG = 10**NUMBER_TEXT_MAX
"""The least whole number of more than `NUMBER_TEXT_MAX` digits: no typed answer is read as it."""


@pytest.mark.parametrize(
    "number",
    [
        {"default": TOO_LONG},
        {"default": -(10 ** (NUMBER_TEXT_MAX - 1))},  # 50 digits and a sign
        {"default": 10**5000},  # past a float, past what Python prints
        {"min": 10**400},
        {"max": -(10**400)},
        {"min": TOO_LONG, "default": TOO_LONG + 1},
    ],
)
def test_a_number_no_one_could_type_back_is_refused_by_name(number: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        Item(id="replicas", text="Replicas", type="number", **number)
    assert f"at most {NUMBER_TEXT_MAX} characters" in str(caught.value)


def test_the_longest_typeable_numbers_are_asked_and_typed_back() -> None:
    for default in (TOO_LONG - 1, -(10 ** (NUMBER_TEXT_MAX - 1)) + 1):
        request = Request(reason="Count", items=[Item(id="n", text="N", type="number", integer=True, default=default)])
        assert request.validate_answers([Answer(id="n", free_text=str(default))]) == [Answer(id="n", number=default)]


def test_an_answer_of_a_number_no_one_could_type_is_refused_not_crashed_on() -> None:
    request = Request(reason="Count", items=[Item(id="n", text="N", type="number")])
    with pytest.raises(AnswerError) as caught:
        request.validate_answers([Answer(id="n", number=10**5000)])
    assert caught.value.errors == {"n": f"a number of at most {NUMBER_TEXT_MAX} characters, written out"}


@pytest.mark.parametrize("bounds", [{"max": TOO_LONG}, {"min": -(10**400)}, {"min": -TOO_LONG, "max": TOO_LONG}])
def test_a_stored_request_with_a_bound_no_one_could_type_still_reads_back(bounds: dict[str, Any]) -> None:
    item = {"id": "n", "text": "N", "type": "number", "integer": True, **bounds}
    raw = json.dumps({"reason": "Count", "items": [item]})  # as an earlier version stored it
    stored = Request.model_validate_json(raw, context=STORED)
    assert (stored.items[0].min, stored.items[0].max) == (bounds.get("min"), bounds.get("max"))
    assert stored.validate_answers([Answer(id="n", free_text="7")]) == [Answer(id="n", number=7)]
    with pytest.raises(ValidationError, match=f"at most {NUMBER_TEXT_MAX} characters"):
        Request.model_validate_json(raw)
