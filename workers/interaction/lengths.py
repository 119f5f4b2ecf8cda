"""Text lengths in UTF-16 code units, the unit of every question length limit.

Slack's limits say "characters" without naming the unit. In UTF-16 code units, a character
outside the Basic Multilingual Plane counts 2. Most emoji are such characters. So a length is
never less than its count of code points. Text that fits here fits whichever of the two Slack
counts. The limits of an agent's question live here, beside the port's models that enforce them.
`bot.slack.limits` re-exports them with Slack's own block limits.
"""

from __future__ import annotations

from collections.abc import Callable

UNIT = "UTF-16 code units"
"""The unit of every length limit below (an emoji such as 🚀 counts 2)."""

OPTION_TEXT_MAX = 75
"""An option's label (and a button's text)."""
OPTION_DESCRIPTION_MAX = 75
OPTION_VALUE_MAX = 150
LABEL_MAX = 2000
"""An input block's label: an item's text."""
PLACEHOLDER_MAX = 150
HEADER_MAX = 150
SECTION_MAX = 3000
"""A section's text, and the text of one element of a context block."""
REASON_MAX = 3000
"""A question's reason: one section's worth."""
TEXT_INPUT_MAX = 3000
"""The most a `plain_text_input` (a free-text answer) may hold."""


def utf16_len(text: str) -> int:
    """The length of `text` in UTF-16 code units (outside the BMP, 2)."""
    if text.isascii():
        return len(text)
    # The codec counts in C; "surrogatepass" counts a lone surrogate as the one unit it is.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_prefix(text: str, units: int) -> str:
    """The longest start of `text` that is at most `units` UTF-16 code units long.

    It ends on a whole character, so a surrogate pair is never cut in two.
    """
    if units <= 0:
        return ""
    if len(text) <= units // 2 or utf16_len(text) <= units:
        return text
    used = 0
    for n, c in enumerate(text):
        used += 2 if ord(c) > 0xFFFF else 1
        if used > units:
            return text[:n]
    return text


def fits(limit: int) -> Callable[[str | None], str | None]:
    """A pydantic after-validator refusing text over `limit` UTF-16 code units.

    Its message counts in those units.
    """

    def check(text: str | None) -> str | None:
        if text is not None and (size := utf16_len(text)) > limit:
            raise ValueError(f"at most {limit} characters counted in {UNIT} (an emoji counts 2); this text is {size}")
        return text

    return check
