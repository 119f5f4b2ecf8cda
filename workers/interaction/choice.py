"""Turn a short typed reply ("2", "the second one", "segunda", "med") into a select option.

People answering in a thread or a terminal type rather than click. This module finds the one
item a reply can answer (`reply_item`). It maps what they type onto exactly one offered option.
Failing that, it explains why with the numbered list of options. The host can then ask again
instead of guessing.
"""

from __future__ import annotations

import re
import unicodedata

from workers.interaction.exceptions import ChoiceError
from workers.interaction.models import Answer, Item, ItemType, Request

_ORDINAL_WORDS: dict[str, int] = {
    **dict.fromkeys(("first", "one"), 1),
    **dict.fromkeys(("second", "two"), 2),
    **dict.fromkeys(("third", "three"), 3),
    **dict.fromkeys(("fourth", "four"), 4),
    **dict.fromkeys(("fifth", "five"), 5),
    **dict.fromkeys(("sixth", "six"), 6),
    **dict.fromkeys(("seventh", "seven"), 7),
    **dict.fromkeys(("eighth", "eight"), 8),
    **dict.fromkeys(("ninth", "nine"), 9),
    **dict.fromkeys(("tenth", "ten"), 10),
    "last": -1,
}
# Portuguese ordinals agree in gender with the noun: primeiro/primeira, ...
for _stem, _n in (
    ("primeir", 1),
    ("segund", 2),
    ("terceir", 3),
    ("quart", 4),
    ("quint", 5),
    ("sext", 6),
    ("setim", 7),
    ("oitav", 8),
    ("non", 9),
    ("decim", 10),
    ("ultim", -1),
):
    _ORDINAL_WORDS[_stem + "o"] = _ORDINAL_WORDS[_stem + "a"] = _n

# Filler around an ordinal: "the second one", "option 2", "#2", "o segundo", "a segunda opção".
_LEADING = re.compile(r"^(?:(?:the|o|a|option|opcao|number|numero)\b\.?\s*|#\s*)+")
_TRAILING = re.compile(r"(?:\s+(?:one|option|opcao))?\s*[.!)]*$")
# "2", "2nd", "2º"/"2ª" (which normalise to "2o"/"2a").
_NUMBER = re.compile(r"^(\d{1,3})(?:st|nd|rd|th|o|a)?$")
ORDINAL_MAX = 40
"""The longest reply read as an ordinal ("a segunda opcao" is 16): the patterns stay linear."""
NAME_MAX = 160
"""The longest reply read as an option's name: a label is at most 75 characters, a value 150."""
QUOTED_MAX = 80
"""How much of a reply a refusal quotes back."""


def _normalise(text: str) -> str:
    """Casefold, drop accents, collapse whitespace and strip quotes and end punctuation."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(bare.casefold().split()).strip("\"'`").rstrip(".!").strip()


def _ordinal(text: str) -> int | None:
    """The 1-based position `text` names (-1 for "last"), or None."""
    if len(text) > ORDINAL_MAX:
        return None
    core = _TRAILING.sub("", _LEADING.sub("", text)).strip()
    number = _NUMBER.match(core)
    if number:
        return int(number.group(1))
    return _ORDINAL_WORDS.get(core)


def _quoted(text: str) -> str:
    """`text` as a refusal quotes it: trimmed, and cut to `QUOTED_MAX` characters."""
    text = text.strip()
    return repr(text if len(text) <= QUOTED_MAX else text[: QUOTED_MAX - 1] + "…")


def _numbered(item: Item) -> str:
    return ", ".join(f"{n}. {o.label}" for n, o in enumerate(item.options or [], start=1))


REPLY_TYPES = frozenset({ItemType.SELECT, ItemType.BOOLEAN, ItemType.NUMBER})
"""The item types a typed reply can answer on its own: a choice it names, or "yes"/"no" and a number,
which validation reads from the text (`from_text`) and refuses by label when it is neither."""


def reply_item(request: Request) -> Item | None:
    """The one item a typed reply can answer, or None when the form is needed.

    Which item that is, in order of preference:
    - the only required item with no default (a pre-filled one is answered as Submit leaves it)
    - else the only required item
    - else the only item
    Its type must be one a reply can answer (`REPLY_TYPES`). The other items stay as Submit would
    leave them. `reply_answers` gives them their defaults. A reply never answers a question holding
    a secret, since the text may be the secret.
    """
    if request.has_secret:
        return None
    required = (
        [i for i in request.items if i.required and i.default is None]
        or [i for i in request.items if i.required]
        or request.items
    )
    if len(required) != 1 or required[0].type not in REPLY_TYPES:
        return None
    if required[0].type is not ItemType.SELECT and not required[0].required:
        return None  # an optional yes/no or number left alone means "no" or nothing: a reply would guess
    return required[0]


def reply_answers(request: Request, item: Item, text: str) -> list[Answer]:
    """The answers a typed reply gives: `item` read from `text`, other items' defaults.

    Raises `ChoiceError` when `text` names no single option of `item`.
    """
    if item.type is ItemType.SELECT:  # an approval's decision is never guessed from a start: "a" is not Approve
        answers = [Answer.for_item(item, resolve_choice(item, text, by_prefix=request.approval is None))]
    else:  # read as a person typed it; validation reads "yes" or "3" into the item's own type
        answers = [Answer(id=item.id, free_text=text)]
    answers += [Answer.for_item(i, i.default) for i in request.items if i is not item and i.default is not None]
    return answers


def resolve_choice(item: Item, text: str, *, by_prefix: bool = True) -> str:
    """The value of the option of `item` that the typed reply `text` names.

    Readings are tried in order, so the least surprising one wins:
    1. an exact label or value (an option literally called "2" or "Last" is honoured)
    2. an ordinal: "2", "#2", "option 2", "the second one", "last", "segunda", "o último"
    3. a unique label or value prefix ("med" for "Medium"), unless `by_prefix` is False
    Matching ignores case, accents and repeated whitespace. A reply ending in "?" asks rather than
    answers, and a reply longer than any name names none. Anything else raises `ChoiceError`. Its
    message lists the options by number. Its `.candidates` holds the values still in play: the
    matching ones, or all.
    """
    if not item.is_choice or not item.options:
        raise ChoiceError(f"item {item.id!r} is a {item.type.value} item, not a choice", [])
    options = item.options
    values = [o.value for o in options]
    wanted = _normalise(text)
    if not wanted:
        raise ChoiceError(f"Please pick one of: {_numbered(item)}", values)
    if wanted.endswith("?"):
        raise ChoiceError(f"{_quoted(text)} asks rather than answers; reply with one of: {_numbered(item)}", values)
    if len(wanted) > NAME_MAX:
        raise ChoiceError(f"{_quoted(text)} is not one of the options: {_numbered(item)}", values)

    exact = [o.value for o in options if wanted in (_normalise(o.label), _normalise(o.value))]
    if len(exact) == 1:
        return exact[0]
    if len(exact) > 1:
        message = f"{_quoted(text)} matches more than one option; reply with its number: {_numbered(item)}"
        raise ChoiceError(message, exact)

    position = _ordinal(wanted)
    if position is not None:
        if position == -1:
            return values[-1]
        if 1 <= position <= len(values):
            return values[position - 1]
        raise ChoiceError(
            f"There is no option {position}: choose a number from 1 to {len(values)} ({_numbered(item)})", values
        )

    prefixed = [
        o.value
        for o in options
        if by_prefix and (_normalise(o.label).startswith(wanted) or _normalise(o.value).startswith(wanted))
    ]
    if len(prefixed) == 1:
        return prefixed[0]
    if prefixed:
        names = ", ".join(o.label for o in options if o.value in prefixed)
        raise ChoiceError(
            f"{_quoted(text)} could be any of {names}; reply with a number or more of the name: {_numbered(item)}",
            prefixed,
        )
    raise ChoiceError(f"{_quoted(text)} is not one of the options: {_numbered(item)}", values)
