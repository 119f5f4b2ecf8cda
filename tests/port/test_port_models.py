"""The port models refuse every malformed request or answer with a specific message."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from workers.interaction import Answer, Item, ItemType, OnExpiry, Option, Outcome, Request

pytestmark = pytest.mark.unit


def select(item_id: str = "sev", **kw) -> Item:
    kw.setdefault("options", ["Low", "Medium", "High"])
    return Item(id=item_id, text="How bad is it?", type="select", **kw)


def refused(match: str):
    return pytest.raises(ValidationError, match=re.escape(match))


# --- items -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", ["", "has space", "dot.ted", "ünïcode", "a" * 65, "slash/"])
def test_item_id_must_match_the_pattern(bad_id):
    with refused("String should match pattern"):
        select(bad_id)


@pytest.mark.parametrize("good_id", ["a", "A-1_b", "x" * 64])
def test_item_id_accepts_letters_digits_dash_underscore(good_id):
    assert select(good_id).id == good_id


def test_options_are_refused_on_free_text():
    with refused("item 'notes': options are only allowed on select and multi_select items"):
        Item(id="notes", text="Notes", type="free_text", options=["a"])


def test_options_are_refused_on_date():
    with refused("item 'due': options are only allowed on select and multi_select items"):
        Item(id="due", text="Due", type="date", options=["a"])


@pytest.mark.parametrize("kind", ["select", "multi_select"])
@pytest.mark.parametrize("options", [None, []])
def test_choice_items_need_options(kind, options):
    with refused(f"item 'q': a {kind} item needs at least one option"):
        Item(id="q", text="Pick", type=kind, options=options)


def test_at_most_100_options():
    assert len(select(options=[str(n) for n in range(100)]).options) == 100
    with refused("item 'sev': at most 100 options, got 101"):
        select(options=[str(n) for n in range(101)])


def test_duplicate_option_values_are_refused():
    with refused("item 'sev': duplicate option values ['a', 'b']"):
        select(options=["a", "b", "c", "b", "a"])


def test_duplicate_values_refused_even_with_different_labels():
    with refused("duplicate option values ['x']"):
        select(options=[{"value": "x", "label": "One"}, {"value": "x", "label": "Two"}])


def test_option_value_at_most_150_characters():
    assert Option(value="v" * 150, label="ok").value == "v" * 150
    with refused("String should have at most 150 characters"):
        Option(value="v" * 151, label="ok")


def test_option_label_at_most_75_characters():
    assert Option(value="ok", label="l" * 75).label == "l" * 75
    with refused("String should have at most 75 characters"):
        Option(value="ok", label="l" * 76)


def test_option_description_at_most_75_characters():
    with refused("String should have at most 75 characters"):
        Option(value="ok", label="ok", description="d" * 76)


def test_empty_option_value_or_label_is_refused():
    with refused("String should have at least 1 character"):
        Option(value="", label="x")
    with refused("String should have at least 1 character"):
        Option(value="x", label="")


def test_bare_string_option_is_shorthand_for_value_and_label():
    option = Option.model_validate("High")
    assert option == Option(value="High", label="High")
    item = select(options=["Low", {"value": "hi", "label": "High"}])
    assert item.options == [Option(value="Low", label="Low"), Option(value="hi", label="High")]


def test_bare_string_option_over_the_label_limit_is_refused():
    with refused("String should have at most 75 characters"):
        Option.model_validate("x" * 76)


def test_multiline_and_max_length_only_on_free_text():
    with refused("item 'sev': multiline and max_length only apply to free_text items"):
        select(multiline=True)
    with refused("item 'due': multiline and max_length only apply to free_text items"):
        Item(id="due", text="Due", type="date", max_length=10)


def test_max_length_is_between_1_and_3000():
    with refused("Input should be less than or equal to 3000"):
        Item(id="n", text="Notes", type="free_text", max_length=3001)
    with refused("Input should be greater than or equal to 1"):
        Item(id="n", text="Notes", type="free_text", max_length=0)


def test_unknown_item_type_is_refused():
    with refused("Input should be 'select', 'multi_select', 'free_text', 'date', 'secret', 'number', 'boolean',"):
        Item(id="q", text="Pick", type="radio")


@pytest.mark.parametrize(
    ("kind", "default", "problem"),
    [
        ("select", "Critical", "'Critical' is not one of the offered options (Low, Medium, High)"),
        ("select", ["Low"], "expected one choice"),
        ("multi_select", ["Low", "Nope"], "['Nope'] not among the offered options (Low, Medium, High)"),
        ("multi_select", ["Low", "Low"], "duplicate choices ['Low']"),
        ("multi_select", "Low", "expected a list of choices"),
        ("date", "2024-13-01", "'2024-13-01' is not a date in YYYY-MM-DD form"),
        ("date", ["2024-01-01"], "expected a date in YYYY-MM-DD form"),
        ("free_text", ["x"], "expected text"),
    ],
)
def test_default_must_be_a_valid_answer(kind, default, problem):
    options = ["Low", "Medium", "High"] if kind in ("select", "multi_select") else None
    with refused(f"item 'q': default is not a valid answer: {problem}"):
        Item(id="q", text="Question", type=kind, options=options, default=default)


def test_free_text_default_respects_max_length():
    with refused("item 'q': default is not a valid answer: text is 6 characters, over the limit of 5"):
        Item(id="q", text="Question", type="free_text", max_length=5, default="sixsix")


def test_valid_defaults_are_kept():
    assert select(default="High").default == "High"
    multi = Item(id="m", text="Which", type="multi_select", options=["a", "b"], default=["b", "a"])
    assert multi.default == ["b", "a"]
    assert Item(id="d", text="When", type="date", default="2026-12-01").default == "2026-12-01"


@pytest.mark.parametrize("model", [Option, Item, Request, Answer, Outcome])
def test_extra_fields_are_refused(model):
    valid = {
        Option: {"value": "v", "label": "l"},
        Item: {"id": "q", "text": "t", "type": "free_text"},
        Request: {"reason": "r", "items": [{"id": "q", "text": "t", "type": "free_text"}]},
        Answer: {"id": "q", "free_text": "x"},
        Outcome: {"paused": True},
    }[model]
    model.model_validate(valid)
    with refused("Extra inputs are not permitted"):
        model.model_validate({**valid, "colour": "blue"})


def test_models_are_frozen():
    item = select()
    with pytest.raises(ValidationError, match="Instance is frozen"):
        item.required = False


# --- requests ------------------------------------------------------------------------------


def free(item_id: str) -> Item:
    return Item(id=item_id, text=f"Question {item_id}", type="free_text")


def test_duplicate_item_ids_are_refused():
    with refused("duplicate item ids ['a']"):
        Request(reason="r", items=[free("a"), free("b"), free("a")])


def test_request_needs_at_least_one_item():
    with refused("List should have at least 1 item after validation, not 0"):
        Request(reason="r", items=[])


def test_request_takes_at_most_ten_items():
    assert len(Request(reason="r", items=[free(f"q{n}") for n in range(10)]).items) == 10
    with refused("List should have at most 10 items after validation, not 11"):
        Request(reason="r", items=[free(f"q{n}") for n in range(11)])


def test_request_reason_must_not_be_empty():
    with refused("String should have at least 1 character"):
        Request(reason="", items=[free("a")])


def test_expires_in_must_be_positive():
    with refused("Input should be greater than 0"):
        Request(reason="r", items=[free("a")], expires_in=0)


def test_assignees_must_be_user_ids_and_are_deduplicated():
    request = Request(reason="r", items=[free("a")], assignees=["U1", "U2", "U1"])
    assert request.assignees == ["U1", "U2"]
    with refused("assignee 'not a user' is not a user id"):
        Request(reason="r", items=[free("a")], assignees=["not a user"])


def test_defaults_build_answers_for_items_with_defaults():
    request = Request(
        reason="r",
        items=[select(default="Low"), free("notes"), Item(id="d", text="When", type="date", default="2026-01-31")],
        on_expiry="use_defaults",
    )
    assert request.on_expiry is OnExpiry.USE_DEFAULTS
    assert request.defaults() == [Answer(id="sev", choice="Low"), Answer(id="d", date="2026-01-31")]


# --- answers -------------------------------------------------------------------------------


def test_answer_with_no_field_is_refused():
    with refused("answer 'a' must set exactly one of choice, choices, free_text, date"):
        Answer(id="a")


def test_answer_with_two_fields_is_refused():
    with refused("answer 'a' must set exactly one of choice, choices, free_text, date"):
        Answer(id="a", choice="x", free_text="y")


def test_answer_id_must_match_the_pattern():
    with refused("String should match pattern"):
        Answer(id="no spaces", choice="x")


def test_answer_field_and_value():
    answer = Answer(id="m", choices=["a", "b"])
    assert (answer.field, answer.value) == ("choices", ["a", "b"])
    assert Answer.for_item(select(), "High") == Answer(id="sev", choice="High")
    assert Answer.for_item(Item(id="d", text="When", type=ItemType.DATE), "2026-01-01").date == "2026-01-01"


# --- JSON round trips ----------------------------------------------------------------------


def full_request() -> Request:
    return Request(
        reason="Deploy the hotfix?",
        items=[
            select(default="Medium"),
            Item(
                id="areas",
                text="Which areas?",
                type="multi_select",
                options=[Option(value="api", label="API", description="The public API"), "Web"],
                required=False,
                default=["api"],
            ),
            Item(id="notes", text="Anything else?", type="free_text", multiline=True, max_length=500, placeholder="…"),
            Item(id="due", text="By when?", type="date", required=False),
        ],
        assignees=["U123", "alice@example.com"],
        expires_in=3600,
        on_expiry="use_defaults",
    )


def test_request_json_round_trip():
    request = full_request()
    assert Request.model_validate_json(request.model_dump_json()) == request


def test_answer_json_round_trip():
    for answer in [
        Answer(id="sev", choice="High"),
        Answer(id="areas", choices=["api", "Web"]),
        Answer(id="notes", free_text='quote " and\nnewline ✓'),
        Answer(id="due", date="2026-12-01"),
    ]:
        assert Answer.model_validate_json(answer.model_dump_json()) == answer


def test_outcome_json_round_trip():
    for outcome in [
        Outcome(paused=True),
        Outcome(paused=False, answers=[Answer(id="sev", choice="High"), Answer(id="areas", choices=[])]),
    ]:
        assert Outcome.model_validate_json(outcome.model_dump_json()) == outcome


def test_json_with_extra_fields_is_refused():
    data = full_request().model_dump()
    data["items"][0]["colour"] = "red"
    with refused("Extra inputs are not permitted"):
        Request.model_validate(data)


@pytest.mark.parametrize("field", ["expires_in", "escalate_after", "last_call"])
@pytest.mark.parametrize("yes_no", [True, False])
def test_a_yes_no_is_not_a_number_of_seconds(field: str, yes_no: bool) -> None:
    """pydantic reads `true` as 1: `"expires_in": true` asked a question that expired in a second."""
    fields = {"reason": "Ship?", "items": [{"id": "go", "text": "Go", "type": "boolean"}], "expires_in": 7200}
    fields["escalate_to"] = ["U0BOB"] if field == "escalate_after" else []
    with pytest.raises(ValidationError, match=rf"{field}\n.*not true or false"):
        Request.model_validate({**fields, field: yes_no})
    assert getattr(Request.model_validate({**fields, field: 600.0}), field) == 600  # a whole float still is one


def test_a_yes_no_is_not_a_length() -> None:
    with pytest.raises(ValidationError, match=r"max_length\n.*not true or false"):
        Item.model_validate({"id": "note", "text": "Note", "type": "free_text", "max_length": True})
