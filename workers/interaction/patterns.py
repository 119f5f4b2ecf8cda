"""The one place a caller's `pattern` is compiled and matched: RE2, in linear time.

A pattern comes from whoever asks: an API token, an agent, an MCP client, an upstream's schema.
The text it is matched against comes from whoever answers. Python's `re` backtracks, so
`(a|a)*b` takes exponential time on forty a's. That stalls the process that matches it. RE2
(`google-re2`) matches in time linear in the text and the pattern, without backtracking. So the
bot may match on its event loop. A pattern is at most `PATTERN_MAX` characters and a text at
most `TEXT_INPUT_MAX`. One match is thus a bounded, sub-millisecond step.

RE2 has no backreferences and no lookaround. Such a pattern does not compile and is refused
where given, naming its item. Its `\\w`, `\\d` and `\\b` are ASCII, as in JSON Schema's
(ECMA-262) regular expressions. `re2` is a required dependency whose matching reaches no host.
So the port may import it (tests/codebase/test_layers.py).
"""

from __future__ import annotations

import functools

import re2

from workers.interaction.exceptions import InteractionError

CACHED_PATTERNS = 128
"""Compiled patterns kept; with `PATTERN_MEMORY` each, at most 256 MiB in all (most take kilobytes)."""
PATTERN_MEMORY = 2 << 20
"""RE2's memory budget per pattern (its default is 8 MiB); a bigger program is refused as too large."""


class PatternError(InteractionError, ValueError):
    """A pattern RE2 cannot compile: bad syntax, a backreference or lookaround."""


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is the caller's error, reported to them; not a log line
    options.max_mem = PATTERN_MEMORY
    return options


@functools.lru_cache(maxsize=CACHED_PATTERNS)
def compiled(pattern: str) -> re2._Regexp:
    """`pattern` compiled by RE2 (cached).

    Raises `PatternError` saying why when RE2 cannot compile it.
    """
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        text = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise PatternError(f"{text} (patterns are RE2: no backreferences or lookaround)") from None


def problem(pattern: str) -> str | None:
    """Why `pattern` cannot be used, or None when RE2 compiles it."""
    try:
        compiled(pattern)
    except PatternError as exc:
        return str(exc)
    return None


def fullmatch(pattern: str, text: str) -> bool:
    """Whether all of `text` matches `pattern`, in time linear in both."""
    return compiled(pattern).fullmatch(text) is not None


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in `text` (JSON Schema's `pattern`), in linear time."""
    return compiled(pattern).search(text) is not None
