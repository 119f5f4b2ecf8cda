"""Text people read must show something: a reason, a label, an option.

Text of only spaces, line breaks or invisible characters (a zero-width space) shows nothing.
People cannot tell what they are asked or what they would pick, and Slack refuses a text object
with nothing in it. So such text is refused where it is required. Where it is optional (a
placeholder, an option's description), it counts as not given. A request read back from the store
(`models.STORED`) is taken as it was written.
"""

from __future__ import annotations

import unicodedata

from pydantic import ValidationInfo

_INVISIBLE = frozenset({"Cf", "Zs"})
"""Unicode categories that show nothing on their own: format characters and spaces."""


def blank(text: str) -> bool:
    """Whether `text` shows nothing: only whitespace and invisible format characters."""
    return all(c.isspace() or unicodedata.category(c) in _INVISIBLE for c in text)


def _stored(info: ValidationInfo) -> bool:
    return bool((info.context or {}).get("stored"))


def must_show(text: str | None, info: ValidationInfo) -> str | None:
    """A pydantic after-validator refusing required text that shows nothing."""
    if text and blank(text) and not _stored(info):
        raise ValueError("shows nothing (only spaces or invisible characters); give text people can read")
    return text


def none_if_blank(text: str | None, info: ValidationInfo) -> str | None:
    """A pydantic after-validator taking optional text that shows nothing as not given.

    A stored request keeps it as written, so its digest stays what a receipt signed.
    """
    return None if text is not None and blank(text) and not _stored(info) else text
