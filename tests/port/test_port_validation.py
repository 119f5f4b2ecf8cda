"""`Request.validate_answers` names each offending item with its specific problem."""

from __future__ import annotations

import pytest

from workers.interaction import Answer, AnswerError, Item, Request

pytestmark = pytest.mark.unit


@pytest.fixture
def request_() -> Request:
    return Request(
        reason="Triage the incident",
        items=[
            Item(id="sev", text="Severity", type="select", options=["Low", "Medium", "High"]),
            Item(id="areas", text="Areas", type="multi_select", options=["API", "Web", "Jobs"], required=False),
            Item(id="notes", text="Notes", type="free_text", required=False),
            Item(id="summary", text="Summary", type="free_text", max_length=20, required=False),
            Item(id="due", text="Due", type="date", required=False),
        ],
    )


def errors_of(request: Request, answers: list[Answer]) -> dict[str, str]:
    with pytest.raises(AnswerError) as caught:
        request.validate_answers(answers)
    return caught.value.errors


def test_valid_answers_pass(request_):
    answers = [Answer(id="sev", choice="High"), Answer(id="due", date="2026-12-01")]
    assert request_.validate_answers(answers) == answers


def test_unknown_item_id(request_):
    errors = errors_of(request_, [Answer(id="sev", choice="Low"), Answer(id="colour", choice="red")])
    assert errors == {"colour": "unknown item id 'colour'"}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Answer(id="sev", choices=["Low"]), "a select item is answered with 'choice', not 'choices'"),
        (Answer(id="areas", choice="API"), "a multi_select item is answered with 'choices', not 'choice'"),
        (Answer(id="notes", date="2026-01-01"), "a free_text item is answered with 'free_text', not 'date'"),
        (Answer(id="due", free_text="2026-01-01"), "a date item is answered with 'date', not 'free_text'"),
    ],
)
def test_wrong_field_for_type(request_, answer, message):
    answers = [answer] if answer.id == "sev" else [Answer(id="sev", choice="Low"), answer]
    assert errors_of(request_, answers) == {answer.id: message}


def test_choice_not_offered(request_):
    errors = errors_of(request_, [Answer(id="sev", choice="Critical")])
    assert errors == {"sev": "'Critical' is not one of the offered options (Low, Medium, High)"}


def test_choice_is_case_sensitive(request_):
    assert errors_of(request_, [Answer(id="sev", choice="high")])["sev"].startswith("'high' is not one of")


def test_duplicate_choices(request_):
    errors = errors_of(request_, [Answer(id="sev", choice="Low"), Answer(id="areas", choices=["API", "Web", "API"])])
    assert errors == {"areas": "duplicate choices ['API']"}


def test_unknown_choices_in_multi_select(request_):
    errors = errors_of(
        request_, [Answer(id="sev", choice="Low"), Answer(id="areas", choices=["API", "Mobile", "Desktop"])]
    )
    assert errors == {"areas": "['Mobile', 'Desktop'] not among the offered options (API, Web, Jobs)"}


def test_missing_required(request_):
    assert errors_of(request_, []) == {"sev": "an answer is required"}
    assert errors_of(request_, [Answer(id="notes", free_text="hi")]) == {"sev": "an answer is required"}


def test_every_problem_is_reported_at_once(request_):
    errors = errors_of(
        request_,
        [Answer(id="areas", choices=["Nope"]), Answer(id="due", date="tomorrow"), Answer(id="x", choice="y")],
    )
    assert set(errors) == {"sev", "areas", "due", "x"}
    assert errors["sev"] == "an answer is required"
    with pytest.raises(AnswerError, match=r"^invalid answers: .*Severity: an answer is required"):
        request_.validate_answers([])


def test_text_over_max_length(request_):
    ok = [Answer(id="sev", choice="Low"), Answer(id="summary", free_text="x" * 20)]
    assert request_.validate_answers(ok) == ok
    errors = errors_of(request_, [Answer(id="sev", choice="Low"), Answer(id="summary", free_text="x" * 21)])
    assert errors == {"summary": "text is 21 characters, over the limit of 20"}


def test_text_over_default_limit_of_3000(request_):
    ok = [Answer(id="sev", choice="Low"), Answer(id="notes", free_text="x" * 3000)]
    assert request_.validate_answers(ok) == ok
    errors = errors_of(request_, [Answer(id="sev", choice="Low"), Answer(id="notes", free_text="x" * 3001)])
    assert errors == {"notes": "text is 3001 characters, over the limit of 3000"}


@pytest.mark.parametrize("bad", ["2024-13-01", "tomorrow", "2024-1-5", "2024-02-30", "20240105", "2024-01-05T10:00"])
def test_malformed_date(request_, bad):
    errors = errors_of(request_, [Answer(id="sev", choice="Low"), Answer(id="due", date=bad)])
    assert errors == {"due": f"{bad!r} is not a date in YYYY-MM-DD form"}


def test_leap_day_is_a_date(request_):
    answers = [Answer(id="sev", choice="Low"), Answer(id="due", date="2024-02-29")]
    assert request_.validate_answers(answers) == answers


def test_answering_an_item_twice(request_):
    errors = errors_of(request_, [Answer(id="sev", choice="Low"), Answer(id="sev", choice="High")])
    assert errors == {"sev": "answered more than once"}


def test_answering_twice_is_refused_even_after_an_empty_answer(request_):
    answers = [Answer(id="sev", choice="Low"), Answer(id="notes", free_text=""), Answer(id="notes", free_text="x")]
    assert errors_of(request_, answers) == {"notes": "answered more than once"}


def test_answering_twice_is_refused_even_after_an_invalid_answer(request_):
    answers = [Answer(id="sev", choice="Critical"), Answer(id="sev", choice="High")]
    assert errors_of(request_, answers) == {"sev": "answered more than once"}


def test_empties_on_optional_items_are_dropped(request_):
    answers = [
        Answer(id="notes", free_text=""),
        Answer(id="areas", choices=[]),
        Answer(id="summary", free_text="   "),
        Answer(id="due", date=""),
        Answer(id="sev", choice="Medium"),
    ]
    assert request_.validate_answers(answers) == [Answer(id="sev", choice="Medium")]


def test_empty_answer_to_a_required_item_counts_as_missing():
    request = Request(reason="r", items=[Item(id="why", text="Why?", type="free_text")])
    assert errors_of(request, [Answer(id="why", free_text="  ")]) == {"why": "an answer is required"}


def test_normalisation_returns_item_order(request_):
    answers = [
        Answer(id="due", date="2026-12-01"),
        Answer(id="notes", free_text="n"),
        Answer(id="areas", choices=["Web"]),
        Answer(id="sev", choice="Low"),
    ]
    assert [a.id for a in request_.validate_answers(answers)] == ["sev", "areas", "notes", "due"]


def test_validation_is_idempotent(request_):
    answers = [Answer(id="notes", free_text=""), Answer(id="areas", choices=["Jobs"]), Answer(id="sev", choice="Low")]
    once = request_.validate_answers(answers)
    assert request_.validate_answers(once) == once
