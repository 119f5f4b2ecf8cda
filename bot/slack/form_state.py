"""Read answers out of Slack's `state.values` and read Parley's block ids back.

A question message's Submit click (`block_actions`) carries
`state.values[block_id][action_id] = {"type": <element type>, <value field>}`. So does a form
submission (`view_submission`). This module turns one interrupt's blocks into `Answer`s, and
nothing more. The port's validation against the stored request decides whether the answers fit.
So option values are passed through raw, and a tampered value is refused there. The option text
Slack echoes back is never read.

Missing keys, `null` and `[]` all mean "no answer". Slack does not promise to send an untouched
element at all.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from bot.slack.blocks_inputs import ANSWER_ACTION_ID, NO, YES
from workers.exceptions import ParleyError
from workers.interaction.models import ITEM_ID_PATTERN, Answer, Item, ItemType, Request
from workers.interaction.validation import DATETIME_FORM

_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_VERSION = re.compile(r"^[0-9]{1,9}$")
_ITEM_ID = re.compile(ITEM_ID_PATTERN)
_VERSIONED_KINDS = frozenset({"qa", "qc", "qd", "qm", "qn", "qr", "qt", "qx", "fr"})
_NUMBERED_KINDS = frozenset({"qh", "fh"})

_TEXT = ("plain_text_input", "number_input", "email_text_input", "url_text_input")
"""Elements whose `value` is text as typed: a number, email or URL item's is read by the port's validation."""
_SINGLE = ("static_select", "external_select", "radio_buttons")
_MULTI = ("multi_static_select", "multi_external_select", "checkboxes")


class StateError(ParleyError, ValueError):
    """`state.values` is not shaped the way Slack documents it."""


BlockRef = tuple[str, str, int | None, str | None]


def parse_block_id(block_id: str) -> BlockRef | None:
    """`(kind, iid, version, item_id)` for a Parley block id, else None.

    - "q|iid|3|env" gives ("q", iid, 3, "env").
    - "f|iid|env" gives ("f", iid, None, "env").
    - "qa|iid|3" gives ("qa", iid, 3, None).
    See `bot.slack.blocks_question` for every kind.
    """
    if not isinstance(block_id, str):
        return None
    parts = block_id.split("|")
    kind = parts[0]
    if len(parts) < 2 or not _TOKEN.fullmatch(parts[1]):
        return None
    iid = parts[1]
    if kind == "q" and len(parts) == 4 and _VERSION.fullmatch(parts[2]) and parts[3]:
        return kind, iid, int(parts[2]), parts[3]
    if kind == "f" and len(parts) == 3 and parts[2]:
        return kind, iid, None, parts[2]
    if kind in _VERSIONED_KINDS and len(parts) == 3 and _VERSION.fullmatch(parts[2]):
        return kind, iid, int(parts[2]), None
    if kind in _NUMBERED_KINDS and len(parts) == 4 and _VERSION.fullmatch(parts[2]) and parts[3].isdigit():
        return kind, iid, int(parts[2]), None
    return None


def _option_value(option: Any, where: str) -> str:
    if not isinstance(option, dict) or not isinstance(option.get("value"), str):
        raise StateError(f"{where}: an option must be an object with a string value")
    return option["value"]


def _answer(item_id: str, element: Any, where: str) -> Answer | None:
    """The answer one element holds, or None when it holds none."""
    if not isinstance(element, dict):
        raise StateError(f"{where}: expected an object, got {type(element).__name__}")
    kind = element.get("type")
    if not isinstance(kind, str):
        raise StateError(f"{where}: element has no type")
    if kind in _SINGLE:
        option = element.get("selected_option")
        return None if option is None else Answer(id=item_id, choice=_option_value(option, where))
    if kind in _MULTI:
        options = element.get("selected_options")
        if options is None:
            return None
        if not isinstance(options, list):
            raise StateError(f"{where}: selected_options must be a list")
        values = [_option_value(o, where) for o in options]
        return Answer(id=item_id, choices=values) if values else None
    if kind in _TEXT:
        value = element.get("value")
        if value is not None and not isinstance(value, str):
            raise StateError(f"{where}: value must be a string or null")
        return None if value is None else Answer(id=item_id, free_text=value)
    if kind == "datepicker":
        date = element.get("selected_date")
        if date is not None and not isinstance(date, str):
            raise StateError(f"{where}: selected_date must be a string or null")
        return None if date is None else Answer(id=item_id, date=date)
    if kind == "timepicker":
        time = element.get("selected_time")
        if time is not None and not isinstance(time, str):
            raise StateError(f"{where}: selected_time must be a string or null")
        return None if time is None else Answer(id=item_id, time=time)
    if kind == "datetimepicker":
        stamp = element.get("selected_date_time")
        if stamp is None:
            return None
        if isinstance(stamp, bool) or not isinstance(stamp, int) or not 0 <= stamp < 253402300800:  # before 10000
            raise StateError(f"{where}: selected_date_time must be a Unix timestamp or null")
        at = dt.datetime.fromtimestamp(stamp, dt.UTC).strftime(DATETIME_FORM)
        return Answer(id=item_id, datetime=at)
    raise StateError(f"{where}: unsupported element type {kind!r}")


def _as_boolean(item: Item, answer: Answer | None) -> Answer | None:
    """A boolean item's radio button or checkbox as True/False.

    Its one checkbox left unchecked is False.
    """
    if answer is None:
        return None if item.required else Answer(id=item.id, boolean=False)
    if answer.choice in (YES, NO):
        return Answer(id=item.id, boolean=answer.choice == YES)
    if answer.choices is not None and set(answer.choices) <= {YES}:
        return Answer(id=item.id, boolean=bool(answer.choices))
    return answer  # an option Parley never offered: validation refuses it


def parse_state_values(request: Request, iid: str, state_values: Any, *, prefix: str = "q") -> list[Answer]:
    """The answers in `state_values` for interrupt `iid`, in item order.

    `prefix` is "q" for a question message, of any version, the newest winning. It is "f" for the
    form modal. Other interrupts' blocks and non-question blocks are ignored. A block id naming an
    item the request lacks still yields an Answer. So validation reports "unknown item id", rather
    than the answer silently vanishing.
    """
    if prefix not in ("q", "f"):
        raise ValueError(f"prefix must be 'q' or 'f', not {prefix!r}")
    if not isinstance(state_values, dict):
        raise StateError(f"state.values must be an object, got {type(state_values).__name__}")
    chosen: dict[str, tuple[int, Answer | None]] = {}
    for block_id, actions in state_values.items():
        ref = parse_block_id(block_id)
        if ref is None or ref[0] != prefix or ref[1] != iid:
            continue
        _, _, version, item_id = ref
        assert item_id is not None
        if not _ITEM_ID.fullmatch(item_id):
            raise StateError(f"{block_id}: {item_id!r} is not an item id")
        if not isinstance(actions, dict):
            raise StateError(f"{block_id}: expected an object of actions, got {type(actions).__name__}")
        element = actions.get(ANSWER_ACTION_ID)
        answer = None if element is None else _answer(item_id, element, f"{block_id}/{ANSWER_ACTION_ID}")
        if isinstance(element, dict) and element.get("type") == "checkboxes" and not element.get("selected_options"):
            answer = None  # an unchecked box: no answer, or False for a boolean (below)
        item = request.item(item_id)
        if item is not None and item.type is ItemType.BOOLEAN:
            answer = _as_boolean(item, answer)
        if item is not None and item.is_secret and answer is not None:
            if prefix != "f":  # the question's message has no input for it: only the form may carry one
                raise StateError(f"{block_id}: a secret is answered only in the form")
            if answer.free_text is not None:
                answer = Answer(id=item_id, secret=answer.free_text)
        rank = version or 0
        if item_id not in chosen or rank >= chosen[item_id][0]:
            chosen[item_id] = (rank, answer)
    for item in request.items:  # an optional yes/no whose unchecked box Slack did not send at all
        if item.type is ItemType.BOOLEAN and not item.required and item.id not in chosen and chosen:
            chosen[item.id] = (0, Answer(id=item.id, boolean=False))
    order = [i.id for i in request.items] + sorted(k for k in chosen if request.item(k) is None)
    return [a for k in order if k in chosen and (a := chosen[k][1]) is not None]
