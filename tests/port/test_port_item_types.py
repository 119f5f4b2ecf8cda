"""The number, boolean, email, url, time and datetime items, and free text's length and pattern rules."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workers.interaction import Answer, AnswerError, Item, Request

pytestmark = pytest.mark.unit


def _request(*items: Item) -> Request:
    return Request(reason="Deploy checkout", items=list(items))


def _refusal(request: Request, answers: list[Answer]) -> AnswerError:
    with pytest.raises(AnswerError) as caught:
        request.validate_answers(answers)
    return caught.value


REPLICAS = Item(id="replicas", text="Replicas", type="number", min=1, max=10, integer=True)
RATIO = Item(id="ratio", text="Ratio", type="number", min=0, max=1, required=False)


def test_a_number_is_bounded_and_worded_with_its_label():
    request = _request(REPLICAS)
    refused = _refusal(request, [Answer(id="replicas", number=11)])
    assert refused.errors == {"replicas": "at most 10"}
    assert refused.worded() == {"replicas": "Replicas: at most 10"}
    assert "Replicas: at most 10" in str(refused)
    assert _refusal(request, [Answer(id="replicas", number=0)]).errors == {"replicas": "at least 1"}
    assert _refusal(request, [Answer(id="replicas", number=2.5)]).errors == {"replicas": "expected a whole number"}


def test_a_number_comes_back_int_when_integer_else_float():
    request = _request(REPLICAS, RATIO)
    valid = request.validate_answers([Answer(id="replicas", number=3.0), Answer(id="ratio", number=1)])
    assert [(a.value, type(a.value)) for a in valid] == [(3, int), (1.0, float)]


def test_a_number_answer_refuses_a_boolean_and_text():
    with pytest.raises(ValidationError):
        Answer(id="replicas", number=True)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Answer(id="replicas", number="3")  # type: ignore[arg-type]


def test_a_boolean_is_true_or_false_and_false_is_an_answer():
    request = _request(Item(id="ok", text="Go ahead?", type="boolean"))
    assert request.validate_answers([Answer(id="ok", boolean=False)]) == [Answer(id="ok", boolean=False)]
    assert _refusal(request, []).errors == {"ok": "an answer is required"}
    with pytest.raises(ValidationError):
        Answer(id="ok", boolean="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("item", "field", "good", "bad", "problem"),
    [
        (
            Item(id="c", text="Contact", type="email"),
            "email",
            "ops@example.com",
            "ops at example",
            "not an email address",
        ),
        (
            Item(id="u", text="Runbook", type="url"),
            "url",
            "https://example.com/runbook",
            "ftp://example.com/x",
            "not a web address (http or https)",
        ),
        (Item(id="t", text="Window", type="time"), "time", "09:30", "9:30pm", "not a time in HH:MM form (24-hour)"),
        (
            Item(id="d", text="Start", type="datetime"),
            "datetime",
            "2026-12-04T17:30:00Z",
            "2026-12-04T17:30:00",
            "not a date and time in UTC, like 2026-12-04T17:30:00Z",
        ),
    ],
)
def test_typed_text_is_checked_and_worded(item, field, good, bad, problem):
    request = _request(item)
    assert [a.value for a in request.validate_answers([Answer.model_validate({"id": item.id, field: good})])] == [good]
    refused = _refusal(request, [Answer.model_validate({"id": item.id, field: bad})])
    assert refused.worded() == {item.id: f"{item.text}: {problem}"}


def test_a_datetime_is_returned_in_utc_with_z():
    request = _request(Item(id="d", text="Start", type="datetime"))
    valid = request.validate_answers([Answer(id="d", datetime="2026-12-04T17:30+00:00")])
    assert valid[0].value == "2026-12-04T17:30:00Z"


def test_free_text_length_and_pattern():
    ticket = Item(
        id="ticket",
        text="Ticket",
        type="free_text",
        min_length=3,
        max_length=12,
        pattern=r"[A-Z]+-\d+",
        pattern_hint="a ticket key like ABC-123",
    )
    request = _request(ticket)
    assert request.validate_answers([Answer(id="ticket", free_text="OPS-42")])[0].value == "OPS-42"
    assert _refusal(request, [Answer(id="ticket", free_text="ops-42")]).worded() == {
        "ticket": "Ticket: not a ticket key like ABC-123"
    }
    assert _refusal(request, [Answer(id="ticket", free_text="A1")]).errors == {"ticket": "at least 3 characters"}
    # The whole answer must match, not a part of it.
    assert "ticket" in _refusal(request, [Answer(id="ticket", free_text="see OPS-42")]).errors


def test_lengths_count_utf16_units():
    request = _request(Item(id="n", text="Name", type="free_text", min_length=4))
    assert request.validate_answers([Answer(id="n", free_text="🚀🚀")])  # 2 characters, 4 units
    assert _refusal(request, [Answer(id="n", free_text="🚀a")]).errors == {"n": "at least 4 characters"}


def test_nothing_is_accepted_while_any_item_is_refused():
    request = _request(REPLICAS, Item(id="c", text="Contact", type="email"))
    refused = _refusal(request, [Answer(id="replicas", number=3), Answer(id="c", email="nope")])
    assert refused.errors == {"c": "not an email address"}


@pytest.mark.parametrize(
    ("item", "default"),
    [
        (REPLICAS, 3),
        (Item(id="ok", text="Ok", type="boolean", required=False), False),
        (Item(id="c", text="Contact", type="email"), "ops@example.com"),
        (Item(id="u", text="Runbook", type="url"), "http://example.com"),
        (Item(id="t", text="Window", type="time"), "23:59"),
        (Item(id="d", text="Start", type="datetime"), "2026-12-04T17:30:00Z"),
    ],
)
def test_every_new_type_takes_a_default(item, default):
    with_default = item.model_copy(update={"default": default})
    request = Request.model_validate({"reason": "r", "items": [with_default.model_dump()], "on_expiry": "use_defaults"})
    assert [a.value for a in request.defaults()] == [default]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"type": "number", "min": 5, "max": 1}, "min 5 is greater than max 1"),
        ({"type": "number", "max": 3, "default": 4}, "default is not a valid answer: at most 3"),
        ({"type": "number", "integer": True, "min": 0.5}, "min and max must be whole numbers"),
        ({"type": "free_text", "min": 1}, "min, max and integer only apply to number items"),
        ({"type": "number", "pattern": "x"}, "only apply to free_text items"),
        ({"type": "free_text", "pattern": "("}, "pattern is not a regular expression"),
        ({"type": "free_text", "pattern_hint": "a key"}, "give the pattern too"),
        ({"type": "free_text", "pattern": r"(a)\1"}, "item 'x': pattern is not a regular expression RE2 accepts"),
        ({"type": "free_text", "pattern": r"(?=a)a"}, "invalid perl operator"),
        ({"type": "free_text", "min_length": 20, "max_length": 10}, "min_length 20 is over max_length 10"),
        ({"type": "boolean", "default": "yes"}, "default is not a valid answer: expected yes or no"),
        ({"type": "email", "default": "x"}, "default is not a valid answer: not an email address"),
    ],
)
def test_item_shape_is_checked(fields, message):
    with pytest.raises(ValidationError, match=message):
        Item.model_validate({"id": "x", "text": "X", **fields})


def test_new_answers_round_trip_through_json():
    request = _request(
        REPLICAS,
        RATIO,
        Item(id="ok", text="Ok", type="boolean"),
        Item(id="c", text="Contact", type="email"),
        Item(id="t", text="Window", type="time"),
        Item(id="d", text="Start", type="datetime"),
    )
    answers = [
        Answer(id="replicas", number=3),
        Answer(id="ratio", number=0.5),
        Answer(id="ok", boolean=True),
        Answer(id="c", email="a@b.io"),
        Answer(id="t", time="08:00"),
        Answer(id="d", datetime="2026-01-01T00:00:00Z"),
    ]
    stored = [a.model_dump_json() for a in request.validate_answers(answers)]
    replayed = [Answer.model_validate_json(s) for s in stored]
    assert replayed == answers
    assert [type(a.value) for a in replayed] == [int, float, bool, str, str, str]
    assert Request.model_validate_json(request.model_dump_json()) == request


@pytest.mark.parametrize(
    ("item", "typed", "value"),
    [
        (REPLICAS, " 4 ", 4),
        (RATIO, "0.25", 0.25),
        (Item(id="n", text="N", type="number"), "1,000", 1000.0),
        (Item(id="ok", text="Ok", type="boolean"), "Yes", True),
        (Item(id="ok", text="Ok", type="boolean"), "no", False),
        (Item(id="t", text="Window", type="time"), "9:05", "09:05"),
        (Item(id="c", text="Contact", type="email"), " ops@example.com ", "ops@example.com"),
    ],
)
def test_typed_text_answers_a_typed_item(item, typed, value):
    valid = _request(item).validate_answers([Answer(id=item.id, free_text=typed)])
    assert valid == [Answer.for_item(item, value)]
    assert type(valid[0].value) is type(value)


@pytest.mark.parametrize(
    ("item", "typed", "worded"),
    [
        (REPLICAS, "four", "Replicas: not a number"),
        (REPLICAS, "40", "Replicas: at most 10"),
        (REPLICAS, "1,5", "Replicas: not a number"),  # never read as 15
        (REPLICAS, "9" * 5000, "Replicas: not a number"),
        (Item(id="ok", text="Go ahead?", type="boolean"), "maybe", "Go ahead?: expected yes or no"),
    ],
)
def test_typed_text_that_gives_no_value_is_refused_by_label(item, typed, worded):
    assert _refusal(_request(item), [Answer(id=item.id, free_text=typed)]).worded() == {item.id: worded}
