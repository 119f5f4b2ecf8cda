"""The one answer validation every host uses, against the stored request."""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import TYPE_CHECKING

from workers.interaction.answers import FIELD_FOR_TYPE, Answer, AnswerValue, ItemType
from workers.interaction.exceptions import AnswerError
from workers.interaction.lengths import utf16_len
from workers.interaction.patterns import fullmatch, problem

if TYPE_CHECKING:  # annotations only: the models call these functions to check themselves
    from workers.interaction.models import Item, Request

# Deliberately loose, as Slack's own email input is: one "@", no spaces, a dot in the domain.
# Whether the address exists is for the mail server to say.
_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(?:\.[^@\s.]+)+")
# http or https, an optional user, a host, an optional port, then anything without spaces. A regular
# expression rather than urllib: the port imports only a few stdlib modules.
_URL = re.compile(r"(?i)https?://(?:[^\s/?#@]+@)?[^\s/?#@:]+(?::\d{1,5})?(?:[/?#]\S*)?")
_TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d")
EMAIL_MAX = 320
URL_MAX = 3000
DATETIME_FORM = "%Y-%m-%dT%H:%M:%SZ"
"""How a `datetime` answer is written: ISO 8601 in UTC, to the second."""
NUMBER_TEXT_MAX = 50
"""The longest typed number read: more digits than any bound needs (and Python's int() limit is far above)."""
_TYPEABLE = 10**NUMBER_TEXT_MAX
"""The least whole number too long to type; a negative one loses a character to its sign."""


def _check_date(value: str) -> str | None:
    try:
        parsed = dt.date.fromisoformat(value)
    except (TypeError, ValueError):
        return f"{value!r} is not a date in YYYY-MM-DD form"
    if parsed.isoformat() != value:
        return f"{value!r} is not a date in YYYY-MM-DD form"
    return None


def show_number(value: float) -> str:
    """A number as people write it: 10, not 10.0."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() and abs(value) < 1e15 else str(value)


def number_words(item: Item) -> str:
    """What a number item takes, in words: "a whole number from 1 to 10"."""
    kind = "a whole number" if item.integer else "a number"
    low = show_number(item.min) if item.min is not None else None
    high = show_number(item.max) if item.max is not None else None
    if low is not None and high is not None:
        return f"{kind} from {low} to {high}"
    if low is not None:
        return f"{kind}, at least {low}"
    return f"{kind}, at most {high}" if high is not None else kind


def number_problem(value: float) -> str | None:
    """Why `value` cannot be a number item's answer, default or bound; None when it can.

    It must be finite. A whole number must also be typeable: at most `NUMBER_TEXT_MAX` characters
    written out, as `from_text` reads it. Checked before any conversion, since a whole number
    too large for a float, or too long to print, raises there.
    """
    if isinstance(value, int):
        if value >= _TYPEABLE or value <= -_TYPEABLE // 10:
            return f"a number of at most {NUMBER_TEXT_MAX} characters, written out"
        return None
    return None if math.isfinite(value) else "must be a finite number"


def _check_number(item: Item, value: AnswerValue) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "expected a number"
    if (problem := number_problem(value)) is not None:
        return "expected a number" if isinstance(value, float) else problem
    if item.integer and not float(value).is_integer():
        return "expected a whole number"
    if item.min is not None and value < item.min:
        return f"at least {show_number(item.min)}"
    if item.max is not None and value > item.max:
        return f"at most {show_number(item.max)}"
    return None


def _check_free_text(item: Item, value: str) -> str | None:
    size = utf16_len(value)
    if size > item.text_limit:
        return f"text is {size} characters, over the limit of {item.text_limit}"
    if item.min_length is not None and size < item.min_length:
        return f"at least {item.min_length} characters"
    if item.pattern is not None and (why := problem(item.pattern)) is not None:  # stored before patterns were RE2
        return f"the pattern {item.pattern} cannot be checked any more ({why}); ask again without it"
    if item.pattern is not None and not fullmatch(item.pattern, value):  # RE2: linear, bounded by text_limit
        return f"not {item.pattern_hint}" if item.pattern_hint else f"does not match the pattern {item.pattern}"
    return None


def _check_url(value: str) -> str | None:
    return None if _URL.fullmatch(value) else "not a web address (http or https)"


def parse_datetime(value: str) -> dt.datetime | None:
    """`value` as an aware UTC datetime, or None.

    It must be ISO 8601 with a UTC offset ("…Z" or "+00:00").
    """
    try:
        parsed = dt.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    if parsed.tzinfo is None or parsed.utcoffset() != dt.timedelta(0):
        return None
    return parsed


def _check_typed_text(item: Item, value: AnswerValue) -> str | None:
    """Email, URL, time and date-and-time answers: text in a set form."""
    if not isinstance(value, str):
        return "expected text"
    if item.type is ItemType.EMAIL:
        ok = utf16_len(value) <= EMAIL_MAX and _EMAIL.fullmatch(value) is not None
        return None if ok else "not an email address"
    if item.type is ItemType.URL:
        return _check_url(value) if utf16_len(value) <= URL_MAX else f"a web address of at most {URL_MAX} characters"
    if item.type is ItemType.TIME:
        return None if _TIME.fullmatch(value) else "not a time in HH:MM form (24-hour)"
    if parse_datetime(value) is None:
        return "not a date and time in UTC, like 2026-12-04T17:30:00Z"
    return None


def value_text(value: AnswerValue) -> str:
    """A single answer as people read it.

    Yes/No for a boolean, 10 rather than 10.0, text as it is.
    """
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, int | float):
        return show_number(value)
    if isinstance(value, list):
        return ", ".join(value)
    return value or ""


TYPED_FROM_TEXT = frozenset(
    {ItemType.NUMBER, ItemType.BOOLEAN, ItemType.EMAIL, ItemType.URL, ItemType.TIME, ItemType.DATETIME}
)
"""Item types an answer may also give as typed text (a message's text input, a thread reply, a terminal)."""
_YES = frozenset({"yes", "y", "true", "sim", "s", "1"})
_NO = frozenset({"no", "n", "false", "nao", "não", "0"})
_WHOLE = re.compile(r"[+-]?\d+")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def from_text(item: Item, text: str) -> AnswerValue | None:
    """The typed value that `text`, as a person typed it, gives `item`.

    None when it gives none. "3" is a number, "yes" or "no" a boolean, "9:30" the time 09:30. Email,
    URL and datetime text is taken as typed (trimmed). `check_value` then judges it.
    """
    typed = text.strip()
    if item.type is ItemType.NUMBER:
        # "1,000" is a thousand; "1,5" is refused rather than read as 15 (or guessed to be 1.5).
        bare = typed.replace(",", "") if _THOUSANDS.fullmatch(typed) else typed
        if len(bare) > NUMBER_TEXT_MAX:
            return None
        if _WHOLE.fullmatch(bare):
            return int(bare)
        return float(bare) if _NUMBER_TEXT.fullmatch(bare) else None
    if item.type is ItemType.BOOLEAN:
        word = typed.casefold().rstrip(".!")
        return True if word in _YES else False if word in _NO else None
    if item.type is ItemType.TIME and re.fullmatch(r"\d:[0-5]\d", typed):
        return "0" + typed
    return typed


def text_problem(item: Item) -> str:
    """Why typed text gave no value for `item`."""
    return "expected yes or no" if item.type is ItemType.BOOLEAN else "not a number"


def normalise(item: Item, value: AnswerValue) -> AnswerValue:
    """A valid answer as the run gets it.

    A number becomes int or float per `integer`. A datetime is cut to the second.
    """
    if item.type is ItemType.NUMBER and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value) if item.integer else float(value)
    if item.type is ItemType.DATETIME and isinstance(value, str) and (parsed := parse_datetime(value)):
        return parsed.astimezone(dt.UTC).strftime(DATETIME_FORM)
    return value


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
        return _check_free_text(item, value)
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
    elif item.type is ItemType.NUMBER:
        return _check_number(item, value)
    elif item.type is ItemType.BOOLEAN:
        return None if isinstance(value, bool) else "expected yes or no"
    else:
        return _check_typed_text(item, value)
    return None


def _is_empty(answer: Answer) -> bool:
    value = answer.value
    return value == [] or (isinstance(value, str) and value.strip() == "" and answer.field != "choice")


def _with(answer: Answer, value: AnswerValue) -> Answer:
    return Answer.model_validate({"id": answer.id, answer.field: value})


def validate_answers(request: Request, answers: list[Answer]) -> list[Answer]:
    """`answers` in item order without empties, or `AnswerError`.

    Each offending item gets one specific message. Causes are an unknown id, or the wrong field for
    its type. Others are a value not offered, a duplicate answer, or text over its limit. Others
    still are a malformed date, or a required item left unanswered. A required choice followed by
    its own "type your own" item is answered by either (`Request.typed_other`). Some items may be
    answered with `free_text` as typed, like "3" or "yes". These are number, boolean, email, URL,
    time and datetime items. `from_text` reads the text, and the value is kept in its own field.
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
        if answer.field == "free_text" and item.type in TYPED_FROM_TEXT and answer.free_text is not None:
            if answer.free_text.strip() == "":
                continue
            typed = from_text(item, answer.free_text)
            if typed is None:
                errors[answer.id] = text_problem(item)
                continue
            answer = Answer.for_item(item, typed)
        if answer.field != expected:
            errors[answer.id] = f"a {item.type.value} item is answered with {expected!r}, not {answer.field!r}"
            continue
        if _is_empty(answer):
            continue
        problem = check_value(item, answer.value)
        if problem:
            errors[answer.id] = problem
            continue
        value = normalise(item, answer.value)
        given[answer.id] = (
            answer if value == answer.value and type(value) is type(answer.value) else _with(answer, value)
        )
    for item in request.items:
        if item.required and item.id not in given and item.id not in errors:
            other = request.typed_other(item.id)
            if other is None:
                errors[item.id] = "an answer is required"
            elif other.id not in given and other.id not in errors:
                errors[item.id] = f"an answer is required: choose one, or fill in “{other.text}”"
    if errors:
        raise AnswerError(errors, labels={i.id: i.text for i in request.items})
    return [given[i.id] for i in request.items if i.id in given]
