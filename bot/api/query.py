"""The API's query parameters, read strictly: a bad value is a 422, never a 500.

The 422 names the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from workers.questions.exceptions import QuestionInvalid

WHOLE = re.compile(r"[0-9]{1,9}")
"""ASCII digits only (`int` also reads "²"-like and other scripts' digits) and few of them (it refuses
over 4,300 digits with an error of its own)."""

UNITS = {"wait": "seconds"}


def whole_number(params: Mapping[str, str], name: str, *, default: int, most: int | None = None) -> int:
    """The parameter `name` as a whole number from 0 to `most`.

    `default` when it is absent.
    """
    raw = params.get(name)
    if raw is None:
        return default
    whole = WHOLE.fullmatch(raw) is not None
    if not whole or (most is not None and int(raw) > most):
        unit = f" of {UNITS[name]}" if name in UNITS else ""
        span = f"from 0 to {most}" if most is not None else "from 0"
        detail = f"{name} must be a whole number{unit} {span}"
        title = f"{name} is at most {most} {UNITS.get(name, '')}".rstrip() if whole else f"{name} is not a whole number"
        errors = [{"loc": ["query", name], "msg": detail, "type": "value_error"}]
        raise QuestionInvalid(detail, errors, title=title)
    return int(raw)
