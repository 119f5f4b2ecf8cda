"""The one answer validation every host uses: answers are checked against the stored request."""

from __future__ import annotations

import datetime as dt

from workers.interaction.exceptions import AnswerError
from workers.interaction.models import FIELD_FOR_TYPE, Answer, AnswerValue, Item, ItemType, Request


def _check_date(value: str) -> str | None:
    try:
        parsed = dt.date.fromisoformat(value)
    except (TypeError, ValueError):
        return f"{value!r} is not a date in YYYY-MM-DD form"
    if parsed.isoformat() != value:
        return f"{value!r} is not a date in YYYY-MM-DD form"
    return None


def check_value(item: Item, value: AnswerValue) -> str | None:
    """The problem with `value` as an answer to `item`, or None when it is acceptable."""
    offered = item.option_values()
    if item.type is ItemType.SELECT:
        if not isinstance(value, str):
            return "expected one choice"
        if value not in offered:
            return f"{value!r} is not one of the offered options ({', '.join(offered)})"
    elif item.type is ItemType.MULTI_SELECT:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return "expected a list of choices"
        dupes = sorted({v for v in value if value.count(v) > 1})
        if dupes:
            return f"duplicate choices {dupes}"
        unknown = [v for v in value if v not in offered]
        if unknown:
            return f"{unknown} not among the offered options ({', '.join(offered)})"
    elif item.type is ItemType.FREE_TEXT:
        if not isinstance(value, str):
            return "expected text"
        if len(value) > item.text_limit:
            return f"text is {len(value)} characters, over the limit of {item.text_limit}"
    elif item.type is ItemType.SECRET:
        # Never quote the value: this message is shown to people and may be logged.
        if not isinstance(value, str):
            return "expected text"
        if len(value) > item.text_limit:
            return f"the secret is {len(value)} characters, over the limit of {item.text_limit}"
    elif item.type is ItemType.DATE:
        if not isinstance(value, str):
            return "expected a date in YYYY-MM-DD form"
        return _check_date(value)
    return None


def _is_empty(answer: Answer) -> bool:
    value = answer.value
    return value == [] or (isinstance(value, str) and value.strip() == "" and answer.field != "choice")


def validate_answers(request: Request, answers: list[Answer]) -> list[Answer]:
    """Return `answers` in item order with empties dropped, or raise `AnswerError`.

    Each offending item gets one specific message: unknown id, wrong field for its
    type, a value that was not offered, a duplicate answer, text over its limit, a
    malformed date, or a required item left unanswered. A required choice followed by its
    "type your own" item (`Request.typed_other`) is answered by either.
    """
    errors: dict[str, str] = {}
    given: dict[str, Answer] = {}
    seen: set[str] = set()
    for answer in answers:
        item = request.item(answer.id)
        if item is None:
            errors[answer.id] = f"unknown item id {answer.id!r}"
            continue
        if answer.id in seen:
            errors[answer.id] = "answered more than once"
            continue
        seen.add(answer.id)
        expected = FIELD_FOR_TYPE[item.type]
        if answer.field != expected:
            errors[answer.id] = f"a {item.type.value} item is answered with {expected!r}, not {answer.field!r}"
            continue
        if _is_empty(answer):
            continue
        problem = check_value(item, answer.value)
        if problem:
            errors[answer.id] = problem
            continue
        given[answer.id] = answer
    for item in request.items:
        if item.required and item.id not in given and item.id not in errors:
            other = request.typed_other(item.id)
            if other is None:
                errors[item.id] = "an answer is required"
            elif other.id not in given and other.id not in errors:
                errors[item.id] = f"an answer is required: choose one, or fill in “{other.text}”"
    if errors:
        raise AnswerError(errors)
    return [given[i.id] for i in request.items if i.id in given]
