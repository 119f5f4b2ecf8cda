"""Decoding Slack's `state.values` into answers, in the shapes Slack documents for each element.

Payloads are written here by hand following Slack's layout
`state.values[block_id][action_id] = {"type": ..., <value field>}`.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack import blocks
from bot.slack.form_state import StateError, parse_block_id, parse_state_values
from workers.interaction.exceptions import AnswerError
from workers.interaction.models import Answer, Item, Request

pytestmark = pytest.mark.unit

IID = "kP3_x-9QmZ2rT7vY1uW0aBcDeFgHiJkLmNoPqRsTuVw"
OTHER = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

REQUEST = Request(
    reason="Deploy?",
    items=[
        {"id": "env", "text": "Env", "type": "select", "options": ["staging", "prod"]},
        {"id": "hosts", "text": "Hosts", "type": "multi_select", "options": ["a", "b", "c"], "required": False},
        {"id": "notes", "text": "Notes", "type": "free_text", "multiline": True, "required": False},
        {"id": "when", "text": "When", "type": "date", "required": False},
    ],
)


def option(value: str, text: str | None = None) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": text or value, "emoji": True}, "value": value}


def select(value: str | None, text: str | None = None, kind: str = "static_select") -> dict[str, Any]:
    return {"type": kind, "selected_option": None if value is None else option(value, text)}


def multi(values: list[str] | None, kind: str = "multi_static_select") -> dict[str, Any]:
    return {"type": kind, "selected_options": None if values is None else [option(v) for v in values]}


def text(value: str | None) -> dict[str, Any]:
    return {"type": "plain_text_input", "value": value}


def date(value: str | None) -> dict[str, Any]:
    return {"type": "datepicker", "selected_date": value}


def state(version: int = 1, iid: str = IID, prefix: str = "q", **elements: dict[str, Any]) -> dict[str, Any]:
    def block_id(item_id: str) -> str:
        return f"f|{iid}|{item_id}" if prefix == "f" else f"q|{iid}|{version}|{item_id}"

    return {block_id(item_id): {"answer": element} for item_id, element in elements.items()}


def test_every_element_type() -> None:
    values = state(
        env=select("prod"),
        hosts=multi(["a", "c"]),
        notes=text("first line\nsecond\n\n  third"),
        when=date("2026-03-01"),
    )
    answers = parse_state_values(REQUEST, IID, values)
    assert answers == [
        Answer(id="env", choice="prod"),
        Answer(id="hosts", choices=["a", "c"]),
        Answer(id="notes", free_text="first line\nsecond\n\n  third"),
        Answer(id="when", date="2026-03-01"),
    ]
    assert REQUEST.validate_answers(answers) == answers


@pytest.mark.parametrize(
    "values",
    [
        state(env=select("prod"), hosts=multi(None), notes=text(None), when=date(None)),
        state(env=select("prod"), hosts=multi([])),
        state(env=select("prod")),
        {**state(env=select("prod")), f"q|{IID}|1|notes": {}, f"q|{IID}|1|when": {"other_action": date("2026-01-01")}},
    ],
    ids=["null", "empty-list", "missing-block", "missing-action"],
)
def test_null_missing_and_empty_mean_no_answer(values: dict[str, Any]) -> None:
    assert parse_state_values(REQUEST, IID, values) == [Answer(id="env", choice="prod")]


def test_unanswered_required_item_is_left_to_validation() -> None:
    answers = parse_state_values(REQUEST, IID, state(env=select(None)))
    assert answers == []
    with pytest.raises(AnswerError) as caught:
        REQUEST.validate_answers(answers)
    assert caught.value.errors == {"env": "an answer is required"}


def test_tampered_value_comes_through_raw_and_is_refused() -> None:
    answers = parse_state_values(REQUEST, IID, state(env=select("prod; drop", text="staging")))
    assert answers == [Answer(id="env", choice="prod; drop")]
    with pytest.raises(AnswerError) as caught:
        REQUEST.validate_answers(answers)
    assert "not one of the offered options" in caught.value.errors["env"]


def test_option_text_is_never_read() -> None:
    answers = parse_state_values(REQUEST, IID, state(env=select("staging", text="Production")))
    assert answers == [Answer(id="env", choice="staging")]


def test_external_selects_and_other_option_elements() -> None:
    values = state(env=select("prod", kind="external_select"), hosts=multi(["b"], kind="multi_external_select"))
    assert parse_state_values(REQUEST, IID, values) == [
        Answer(id="env", choice="prod"),
        Answer(id="hosts", choices=["b"]),
    ]
    radio = state(env=select("staging", kind="radio_buttons"), hosts=multi(["a"], kind="checkboxes"))
    assert [a.value for a in parse_state_values(REQUEST, IID, radio)] == ["staging", ["a"]]


def test_any_version_is_parsed_and_the_newest_wins() -> None:
    assert parse_state_values(REQUEST, IID, state(version=7, env=select("prod"))) == [Answer(id="env", choice="prod")]
    mixed = {**state(version=2, env=select("prod")), **state(version=1, env=select("staging"), when=date("2026-01-02"))}
    assert parse_state_values(REQUEST, IID, mixed) == [
        Answer(id="env", choice="prod"),
        Answer(id="when", date="2026-01-02"),
    ]


def test_other_interrupts_and_foreign_blocks_are_ignored() -> None:
    values = {
        **state(env=select("prod")),
        **state(iid=OTHER, env=select("staging"), notes=text("not mine")),
        f"qa|{IID}|1": {"parley_submit": {"type": "button"}},
        "some-other-app-block": {"answer": "not even an object"},
        f"f|{IID}|notes": {"answer": text("from the form")},
    }
    assert parse_state_values(REQUEST, IID, values) == [Answer(id="env", choice="prod")]


def test_form_prefix() -> None:
    values = {**state(prefix="f", env=select("staging"), notes=text("ok")), **state(env=select("prod"))}
    answers = parse_state_values(REQUEST, IID, values, prefix="f")
    assert answers == [Answer(id="env", choice="staging"), Answer(id="notes", free_text="ok")]
    with pytest.raises(ValueError):
        parse_state_values(REQUEST, IID, values, prefix="x")


def test_unknown_item_yields_an_answer_validation_refuses() -> None:
    answers = parse_state_values(REQUEST, IID, state(env=select("prod"), ghost=text("boo")))
    assert answers == [Answer(id="env", choice="prod"), Answer(id="ghost", free_text="boo")]
    with pytest.raises(AnswerError) as caught:
        REQUEST.validate_answers(answers)
    assert caught.value.errors == {"ghost": "unknown item id 'ghost'"}


def test_wrong_element_for_item_is_left_to_validation() -> None:
    answers = parse_state_values(REQUEST, IID, state(env=text("prod")))
    assert answers == [Answer(id="env", free_text="prod")]
    with pytest.raises(AnswerError):
        REQUEST.validate_answers(answers)


@pytest.mark.parametrize(
    "values",
    [
        None,
        [],
        "values",
        {f"q|{IID}|1|env": []},
        {f"q|{IID}|1|env": {"answer": "prod"}},
        {f"q|{IID}|1|env": {"answer": {"selected_option": option("prod")}}},
        {f"q|{IID}|1|env": {"answer": {"type": "static_select", "selected_option": "prod"}}},
        {f"q|{IID}|1|env": {"answer": {"type": "static_select", "selected_option": {"value": 3}}}},
        {f"q|{IID}|1|env": {"answer": {"type": "static_select", "selected_option": {"text": {}}}}},
        {f"q|{IID}|1|hosts": {"answer": {"type": "multi_static_select", "selected_options": option("a")}}},
        {f"q|{IID}|1|hosts": {"answer": {"type": "multi_static_select", "selected_options": ["a"]}}},
        {f"q|{IID}|1|notes": {"answer": {"type": "plain_text_input", "value": 42}}},
        {f"q|{IID}|1|when": {"answer": {"type": "datepicker", "selected_date": ["2026-01-01"]}}},
        {f"q|{IID}|1|when": {"answer": {"type": "timepicker", "selected_time": 1000}}},
        {f"q|{IID}|1|when": {"answer": {"type": "datetimepicker", "selected_date_time": "2026-01-01T00:00Z"}}},
        {f"q|{IID}|1|when": {"answer": {"type": "datetimepicker", "selected_date_time": True}}},
        {f"q|{IID}|1|when": {"answer": {"type": "rich_text_input", "rich_text_value": {}}}},
        {f"q|{IID}|1|bad.id": {"answer": text("x")}},
    ],
)
def test_malformed_state_raises(values: Any) -> None:
    with pytest.raises(StateError):
        parse_state_values(REQUEST, IID, values)


def test_state_error_is_a_value_error() -> None:
    assert issubclass(StateError, ValueError)


@pytest.mark.parametrize(
    ("block_id", "expected"),
    [
        (f"q|{IID}|3|env", ("q", IID, 3, "env")),
        (f"f|{IID}|env", ("f", IID, None, "env")),
        (f"qa|{IID}|3", ("qa", IID, 3, None)),
        (f"qc|{IID}|12", ("qc", IID, 12, None)),
        (f"qh|{IID}|2|0", ("qh", IID, 2, None)),
        (f"q|{IID}|x|env", None),
        (f"q|{IID}|1", None),
        (f"q|{IID}|1|env|extra", None),
        ("q||1|env", None),
        (f"zz|{IID}|1", None),
        ("hr|run-1", None),
        ("", None),
        ("random-block-id", None),
    ],
)
def test_parse_block_id(block_id: str, expected: Any) -> None:
    assert parse_block_id(block_id) == expected


def test_round_trip_from_rendered_blocks() -> None:
    """Fill in the inputs of a rendered question the way Slack reports them, then parse them back."""
    fill = {
        "select": select("staging"),
        "multi_select": multi(["b"]),
        "free_text": text("hi"),
        "date": date("2026-05-05"),
    }
    for version, prefix, rendered in (
        (5, "q", blocks.question_blocks(REQUEST, IID, version=5, assignees=[])),
        (1, "f", blocks.modal_view(REQUEST, IID)["blocks"]),
    ):
        values = {}
        for block in rendered:
            ref = parse_block_id(block.get("block_id", ""))
            if block["type"] == "input":
                assert ref is not None and ref[0] == prefix and ref[1] == IID
                assert ref[2] == (version if prefix == "q" else None)
                item = REQUEST.item(ref[3] or "")
                assert item is not None
                values[block["block_id"]] = {block["element"]["action_id"]: fill[item.type.value]}
        answers = parse_state_values(REQUEST, IID, values, prefix=prefix)
        assert [a.value for a in REQUEST.validate_answers(answers)] == ["staging", ["b"], "hi", "2026-05-05"]


TYPED = Request(
    reason="Deploy checkout",
    items=[
        Item(id="replicas", text="Replicas", type="number", max=10, integer=True),
        Item(id="go", text="Go ahead?", type="boolean"),
        Item(id="notify", text="Notify?", type="boolean", required=False),
        Item(id="contact", text="Contact", type="email"),
        Item(id="runbook", text="Runbook", type="url"),
        Item(id="at", text="At", type="time"),
        Item(id="start", text="Start", type="datetime"),
    ],
)


def test_the_new_elements_decode_to_typed_answers() -> None:
    values = {
        f"f|{IID}|replicas": {"answer": {"type": "number_input", "value": "4"}},
        f"f|{IID}|go": {"answer": {"type": "radio_buttons", "selected_option": option("false")}},
        f"f|{IID}|notify": {"answer": {"type": "checkboxes", "selected_options": [option("true")]}},
        f"f|{IID}|contact": {"answer": {"type": "email_text_input", "value": "ops@example.com"}},
        f"f|{IID}|runbook": {"answer": {"type": "url_text_input", "value": "https://example.com/rb"}},
        f"f|{IID}|at": {"answer": {"type": "timepicker", "selected_time": "09:30"}},
        f"f|{IID}|start": {"answer": {"type": "datetimepicker", "selected_date_time": 1796405400}},
    }
    answers = TYPED.validate_answers(parse_state_values(TYPED, IID, values, prefix="f"))
    assert [a.value for a in answers] == [
        4,
        False,
        True,
        "ops@example.com",
        "https://example.com/rb",
        "09:30",
        "2026-12-04T17:30:00Z",
    ]


def test_an_unchecked_optional_boolean_is_false_whether_or_not_slack_sends_it() -> None:
    base = {f"q|{IID}|1|go": {"answer": {"type": "radio_buttons", "selected_option": option("true")}}}
    unchecked = {f"q|{IID}|1|notify": {"answer": {"type": "checkboxes", "selected_options": []}}}
    for values in (base, {**base, **unchecked}):
        answers = parse_state_values(TYPED, IID, values)
        assert [(a.id, a.value) for a in answers] == [("go", True), ("notify", False)]


def test_a_message_text_input_for_a_number_is_read_and_refused_by_label() -> None:
    values = {f"q|{IID}|1|replicas": {"answer": text("12")}}
    with pytest.raises(AnswerError) as caught:
        TYPED.validate_answers(parse_state_values(TYPED, IID, values))
    assert caught.value.worded()["replicas"] == "Replicas: at most 10"
