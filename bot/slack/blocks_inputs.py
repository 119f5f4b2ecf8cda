"""Block Kit inputs for a question's items, in its message and in its form.

Each item type has its element: selects, typed inputs, date and time pickers. Number, email and
URL inputs exist only in modals, so a message shows a text input Parley reads at Submit. A
message or form that outgrows Slack's budget sheds text here. Its biggest selects load their
options on demand (`by_option_text`), then labels are cut (`largest_fitting`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_sdk.models.blocks import (
    CheckboxesElement,
    DatePickerElement,
    DateTimePickerElement,
    EmailInputElement,
    ExternalDataMultiSelectElement,
    ExternalDataSelectElement,
    InputBlock,
    NumberInputElement,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    RadioButtonsElement,
    StaticMultiSelectElement,
    StaticSelectElement,
    TimePickerElement,
    UrlInputElement,
)

from bot.slack.limits import DATETIME_PICKER_MAX, LABEL_MAX, OPTION_DESCRIPTION_MAX, BlockLimitError, utf16_len
from bot.slack.mrkdwn import fold_blank_lines, truncate
from workers.interaction.models import Item, ItemType, Request
from workers.interaction.validation import TYPED_FROM_TEXT, number_words, parse_datetime, show_number, value_text

ANSWER_ACTION_ID = "answer"
"""The action_id of every item's input element: its block_id names the item."""
_PLACEHOLDERS = {
    ItemType.SELECT: "Choose an option",
    ItemType.MULTI_SELECT: "Choose options",
    ItemType.FREE_TEXT: "Type your answer",
    ItemType.DATE: "Pick a date",
    ItemType.SECRET: "Type the secret",
    ItemType.NUMBER: "Type a number",
    ItemType.BOOLEAN: "Yes or no",
    ItemType.EMAIL: "name@example.com",
    ItemType.URL: "https://…",
    ItemType.TIME: "Pick a time",
    ItemType.DATETIME: "Pick a date and time",
}
MODAL_ONLY = frozenset({ItemType.NUMBER, ItemType.EMAIL, ItemType.URL})
"""Items whose own element Slack allows only in modals: a message shows them as a text input that
Parley reads and validates at Submit (`workers.interaction.validation.from_text`)."""
YES, NO = "true", "false"
"""The option values of a boolean item's Yes / No radio buttons (and its one checkbox, `YES`)."""
SECRET_HINT = "Sealed for the run alone: nobody sees it again, and it is deleted when the run ends."
_SHORTENED_HINT = "Question shortened here; “Answer in a form” shows it in full."
PICKER_SPAN = "1970-01-01T00:00:00Z to 2286-11-20T17:46:39Z"
"""The datetimes Slack's date-and-time picker can be pre-set to (`limits.DATETIME_PICKER_MAX`)."""
OTHER_HINT = "Required: choose one, or fill in “{other}” below."
"""Under a required choice that its "type your own" item may stand in for: Slack can only show both as optional."""


def _has_line_break(text: str) -> bool:
    """Whether `text` breaks a line.

    A one-line input drops the break, so a default it pre-fills would come back changed.
    """
    return "\n" in text or "\r" in text


def _description(text: str | None, cap: int) -> str | None:
    """An option's description cut to `cap` (none at 0), keeping a form within budget."""
    return truncate(text, cap) if text and cap > 0 else None


def _option(item: Item, value: str, description_cap: int = OPTION_DESCRIPTION_MAX) -> Option:
    opt = item.option(value)
    label = opt.label if opt else value
    return Option(value=value, label=label, description=_description(opt.description if opt else None, description_cap))


def format_hint(item: Item) -> str | None:
    """The input's hint for what a typed item expects, where its element does not show it."""
    if item.type is ItemType.NUMBER:
        return number_words(item).capitalize()
    if item.type is ItemType.FREE_TEXT and item.pattern_hint:
        return f"Expected: {item.pattern_hint}"
    if item.type is ItemType.DATETIME:
        return "Answered in your Slack time zone; the run gets it in UTC."
    return None


def _typed_element(item: Item, placeholder: PlainTextObject, *, modal: bool) -> Any:
    """The element of a number, boolean, email, URL, time or datetime item.

    Number, email and URL inputs exist only in modals. In a message they are a plain text input,
    read and validated at Submit. Slack wants a number input's bounds as strings.
    """
    default = item.default
    text_default = value_text(default) if default is not None else None
    if item.type in MODAL_ONLY and not modal:
        return PlainTextInputElement(action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_value=text_default)
    if item.type is ItemType.NUMBER:
        return NumberInputElement(
            action_id=ANSWER_ACTION_ID,
            placeholder=placeholder,
            is_decimal_allowed=not item.integer,
            min_value=show_number(item.min) if item.min is not None else None,
            max_value=show_number(item.max) if item.max is not None else None,
            initial_value=text_default,
        )
    if item.type is ItemType.EMAIL:
        return EmailInputElement(action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_value=text_default)
    if item.type is ItemType.URL:
        return UrlInputElement(action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_value=text_default)
    if item.type is ItemType.BOOLEAN:
        yes, no = Option(value=YES, label="Yes"), Option(value=NO, label="No")
        if not item.required:  # one checkbox: left unchecked, the answer is False
            return CheckboxesElement(
                action_id=ANSWER_ACTION_ID, options=[yes], initial_options=[yes] if default is True else None
            )
        initial = yes if default is True else no if default is False else None
        return RadioButtonsElement(action_id=ANSWER_ACTION_ID, options=[yes, no], initial_option=initial)
    if item.type is ItemType.TIME:
        return TimePickerElement(
            action_id=ANSWER_ACTION_ID,
            placeholder=placeholder,
            initial_time=default if isinstance(default, str) else None,
        )
    at = parse_datetime(default) if isinstance(default, str) else None
    stamp = int(at.timestamp()) if at else None
    if stamp is not None and not 0 <= stamp <= DATETIME_PICKER_MAX:
        shows = f"what Slack's date-and-time picker shows, {PICKER_SPAN}"
        raise BlockLimitError([f"item {item.id!r}: its default {default} is outside {shows}"])
    return DateTimePickerElement(action_id=ANSWER_ACTION_ID, initial_date_time=stamp)


def _element(item: Item, *, external: bool, description_cap: int = OPTION_DESCRIPTION_MAX, modal: bool = False) -> Any:
    """The input element for `item`, default pre-filled, descriptions cut to `description_cap`."""
    placeholder = PlainTextObject(text=item.placeholder or _PLACEHOLDERS[item.type])
    if item.type in TYPED_FROM_TEXT:
        return _typed_element(item, placeholder, modal=modal)
    default = item.default
    options = [
        Option(value=o.value, label=o.label, description=_description(o.description, description_cap))
        for o in item.options or []
    ]
    if item.type is ItemType.SELECT:
        initial = _option(item, default, description_cap) if isinstance(default, str) else None
        if external:
            return ExternalDataSelectElement(
                action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_option=initial, min_query_length=0
            )
        return StaticSelectElement(
            action_id=ANSWER_ACTION_ID, placeholder=placeholder, options=options, initial_option=initial
        )
    if item.type is ItemType.MULTI_SELECT:
        initial_list = (
            [_option(item, v, description_cap) for v in default] if isinstance(default, list) and default else None
        )
        if external:
            return ExternalDataMultiSelectElement(
                action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_options=initial_list, min_query_length=0
            )
        return StaticMultiSelectElement(
            action_id=ANSWER_ACTION_ID, placeholder=placeholder, options=options, initial_options=initial_list
        )
    if item.type is ItemType.SECRET:  # never pre-filled: a secret has no default
        return PlainTextInputElement(action_id=ANSWER_ACTION_ID, placeholder=placeholder, max_length=item.text_limit)
    if item.type is ItemType.FREE_TEXT:
        return PlainTextInputElement(
            action_id=ANSWER_ACTION_ID,
            placeholder=placeholder,
            multiline=item.multiline or (isinstance(default, str) and _has_line_break(default)),
            max_length=item.text_limit,
            initial_value=default if isinstance(default, str) and default else None,
        )
    return DatePickerElement(
        action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_date=default if isinstance(default, str) else None
    )


def input_block(
    item: Item,
    block_id: str,
    *,
    external: bool,
    other: Item | None = None,
    label_cap: int = LABEL_MAX,
    description_cap: int = OPTION_DESCRIPTION_MAX,
    modal: bool = False,
) -> InputBlock:
    """The input block for `item`.

    With `other`, its "type your own" item, a required choice is optional to Slack. Slack has no
    "one of these two" check, so the form's own validation asks for one.
    """
    text = fold_blank_lines(item.text)
    label = truncate(text, label_cap)
    one_of = other is not None and item.required
    if label != text:
        hint: str | None = _SHORTENED_HINT
    elif item.is_secret:
        hint = SECRET_HINT
    elif one_of and other is not None:
        hint = OTHER_HINT.format(other=truncate(other.text, LABEL_MAX))
    else:
        hint = format_hint(item)
    return InputBlock(
        block_id=block_id,
        label=PlainTextObject(text=label),
        element=_element(item, external=external, description_cap=description_cap, modal=modal),
        optional=not item.required or one_of,
        hint=PlainTextObject(text=hint) if hint else None,
    )


def is_external(item: Item, threshold: int) -> bool:
    return item.is_choice and len(item.options or []) > threshold


def by_option_text(request: Request, external: set[str]) -> list[Item]:
    """The choice items still showing their options, the most option text first."""
    return sorted(
        (i for i in request.items if i.is_choice and i.id not in external),
        key=lambda i: -sum(utf16_len(o.label) + utf16_len(o.description or "") for o in i.options or []),
    )


def largest_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest cap in `low..high` that `fits`, else `low`.

    `fits` only turns false as the cap grows.
    """
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low
