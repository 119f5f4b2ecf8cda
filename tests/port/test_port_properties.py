"""Properties of the port over randomly generated requests and answers."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from workers.interaction import Answer, AnswerError, Item, ItemType, Option, Request, answers_to_values
from workers.interaction.lengths import OPTION_TEXT_MAX, utf16_prefix
from workers.interaction.texts import blank

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
ANSWERS = TypeAdapter(list[Answer])

item_ids = st.from_regex(r"[A-Za-z0-9_-]{1,16}", fullmatch=True)
words = st.text(min_size=1, max_size=40).filter(lambda s: not blank(s))  # text that shows something
non_blank = st.text(min_size=1, max_size=60).filter(lambda s: s.strip() != "")
iso_dates = st.dates().map(dt.date.isoformat)
labels = st.text(min_size=1, max_size=75).map(lambda s: utf16_prefix(s, OPTION_TEXT_MAX)).filter(lambda s: not blank(s))


@st.composite
def options(draw) -> list[Option]:
    values = draw(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=8, unique=True))
    return [Option(value=v, label=draw(labels), description=draw(st.none() | labels)) for v in values]


@st.composite
def valid_value(draw, item: Item, *, non_empty: bool = True):
    """A value `item` accepts; never empty when `non_empty`, so it counts as an answer."""
    if item.type is ItemType.SELECT:
        return draw(st.sampled_from(item.option_values()))
    if not non_empty:
        return [] if item.type is ItemType.MULTI_SELECT else draw(st.sampled_from(["", " ", "\n\t"]))
    if item.type is ItemType.MULTI_SELECT:
        values = item.option_values()
        return draw(st.lists(st.sampled_from(values), min_size=1, max_size=len(values), unique=True))
    if item.type in (ItemType.FREE_TEXT, ItemType.SECRET):
        return draw(non_blank.map(lambda s: utf16_prefix(s, item.text_limit)).filter(lambda s: s.strip() != ""))
    if item.type is ItemType.NUMBER:
        low, high = item.min if item.min is not None else -1e6, item.max if item.max is not None else 1e6
        if item.integer:
            return draw(st.integers(math.ceil(low), math.floor(high)))
        return draw(st.floats(low, high, allow_nan=False, allow_infinity=False))
    if item.type is ItemType.BOOLEAN:
        return draw(st.booleans())
    if item.type is ItemType.EMAIL:
        return draw(st.from_regex(r"[a-z0-9._+-]{1,20}@[a-z0-9-]{1,20}\.[a-z]{2,6}", fullmatch=True))
    if item.type is ItemType.URL:
        return draw(st.from_regex(r"https?://[a-z0-9-]{1,20}\.[a-z]{2,6}(/[a-z0-9._~-]{0,20})?", fullmatch=True))
    if item.type is ItemType.TIME:
        return draw(st.times().map(lambda t: t.strftime("%H:%M")))
    if item.type is ItemType.DATETIME:
        return draw(st.datetimes(min_value=dt.datetime(2000, 1, 1)).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")))
    return draw(iso_dates)


@st.composite
def items(draw, item_id: str) -> Item:
    kind = draw(st.sampled_from(list(ItemType)))
    extra: dict = {}
    if kind in (ItemType.SELECT, ItemType.MULTI_SELECT):
        extra["options"] = draw(options())
    if kind is ItemType.FREE_TEXT:
        extra["multiline"] = draw(st.booleans())
        extra["max_length"] = draw(st.none() | st.integers(1, 3000))
        extra["placeholder"] = draw(st.none() | words)
    if kind is ItemType.NUMBER:
        extra["integer"] = draw(st.booleans())
        extra["min"] = draw(st.none() | st.integers(-1000, 0))
        extra["max"] = draw(st.none() | st.integers(1, 1000))
    item = Item(id=item_id, text=draw(words), type=kind, required=draw(st.booleans()), **extra)
    if not item.is_secret and draw(st.booleans()):  # a secret takes no default
        item = Item.model_validate({**item.model_dump(), "default": draw(valid_value(item))})
    return item


@st.composite
def requests(draw) -> Request:
    ids = draw(st.lists(item_ids, min_size=1, max_size=10, unique=True))
    return Request(
        reason=draw(words),
        items=[draw(items(i)) for i in ids],
        assignees=draw(st.lists(st.from_regex(r"U[A-Z0-9]{1,10}", fullmatch=True), max_size=3)),
        expires_in=draw(st.none() | st.integers(1, 10**6)),
        on_expiry=draw(st.sampled_from(["fail", "use_defaults"])),
    )


@st.composite
def answered(draw) -> tuple[Request, list[Answer], list[Answer]]:
    """A request, valid answers to it in random order, and the answers validation should keep."""
    request = draw(requests())
    answers, kept = [], []
    for item in request.items:
        if item.required or draw(st.booleans()):
            answer = Answer.for_item(item, draw(valid_value(item)))
            answers.append(answer)
            kept.append(answer)
        elif item.type not in (ItemType.SELECT, ItemType.NUMBER, ItemType.BOOLEAN) and draw(st.booleans()):
            answers.append(Answer.for_item(item, draw(valid_value(item, non_empty=False))))  # an empty, dropped
    return request, draw(st.permutations(answers)), kept


@given(answered())
@SETTINGS
def test_valid_answers_always_validate_and_round_trip(case):
    request, answers, kept = case
    normalised = request.validate_answers(answers)
    assert normalised == kept
    assert ANSWERS.validate_json(ANSWERS.dump_json(normalised)) == normalised
    values = answers_to_values(request, normalised)
    assert list(values) == [i.id for i in request.items]
    assert all(values[a.id] == a.value for a in normalised)


@st.composite
def one_bad_choice(draw) -> tuple[Request, list[Answer], str]:
    request = draw(requests().filter(lambda r: any(i.is_choice for i in r.items)))
    target = draw(st.sampled_from([i for i in request.items if i.is_choice]))
    stranger = draw(st.text(min_size=1, max_size=30).filter(lambda v: v not in target.option_values()))
    answers = [Answer.for_item(i, draw(valid_value(i))) for i in request.items if i is not target]
    if target.type is ItemType.SELECT:
        bad = Answer(id=target.id, choice=stranger)
    else:
        chosen = draw(st.lists(st.sampled_from(target.option_values()), unique=True))
        bad = Answer(id=target.id, choices=[*chosen, stranger])
    answers.insert(draw(st.integers(0, len(answers))), bad)
    return request, answers, target.id


@given(one_bad_choice())
@SETTINGS
def test_a_choice_not_offered_is_refused_naming_its_item(case):
    request, answers, target = case
    try:
        request.validate_answers(answers)
    except AnswerError as exc:
        assert set(exc.errors) == {target}
        assert "not" in exc.errors[target] and "offered options" in exc.errors[target]
    else:
        raise AssertionError("an answer that was not offered was accepted")


@given(answered())
@SETTINGS
def test_validation_is_idempotent(case):
    request, answers, _ = case
    once = request.validate_answers(answers)
    assert request.validate_answers(once) == once


@given(requests())
@SETTINGS
def test_request_json_round_trip(request):
    assert Request.model_validate_json(request.model_dump_json()) == request
    assert Request.model_validate(request.model_dump()) == request
    defaults = request.defaults()
    assert ANSWERS.validate_json(ANSWERS.dump_json(defaults)) == defaults
