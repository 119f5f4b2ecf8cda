"""Redacted values found by value, and removed from every text Parley keeps or shows.

A rule's `redact` paths hide values where the arguments hold them. An upstream may still echo
one back, in a tool error, a protocol error or a result. And the same value may sit under a path
no rule names. A `Scrubber` replaces each redacted value wherever it appears with `REDACTED`. It
catches the value as written, and as JSON, Python's `repr` or a URL spell it. It catches such
spellings once or twice over. Strings and numbers are secrets here, but `true`, `false` and
`null` are not.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import Any
from urllib.parse import quote, quote_plus

import mcp_types as types

from bot.mcp.rules import REDACTED, redacted, redacted_values, with_redacted_restored


def _leaves(value: Any) -> Iterable[str]:
    """The strings and numbers `value` holds, each as text."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield json.dumps(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)


_SPELLINGS: tuple[Callable[[str], str], ...] = (
    lambda text: json.dumps(text)[1:-1],
    lambda text: json.dumps(text, ensure_ascii=False)[1:-1],
    lambda text: repr(text)[1:-1],
    lambda text: quote(text, safe=""),
    lambda text: quote_plus(text),
)
"""How an echo may spell a value: inside a JSON string, a Python repr, a URL."""


def _forms(text: str) -> set[str]:
    """`text` as an echo may spell it: as is, or spelled once or twice over.

    JSON in a repr is one such spelling.
    """
    once = {spell(text) for spell in _SPELLINGS}
    return {text} | once | {spell(form) for form in once for spell in _SPELLINGS}


class Scrubber:
    """Replaces the redacted values it was given, in any text or JSON value, with `REDACTED`."""

    def __init__(self, values: Iterable[Any]) -> None:
        forms: set[str] = set()
        for value in values:
            for leaf in _leaves(value):
                forms |= _forms(leaf)
        forms.discard("")
        self.forms = tuple(sorted(forms, key=len, reverse=True))  # a longer form first: it may hold a shorter one

    @classmethod
    def joined(cls, scrubbers: Iterable[Scrubber]) -> Scrubber:
        """One scrubber removing what each of `scrubbers` removes."""
        joined = cls(())
        forms = {form for scrubber in scrubbers for form in scrubber.forms}
        joined.forms = tuple(sorted(forms, key=len, reverse=True))
        return joined

    @classmethod
    def of(cls, arguments: Mapping[str, Any], patterns: tuple[str, ...]) -> Scrubber:
        """The scrubber of the values at `patterns` in `arguments`."""
        return cls(redacted_values(arguments, patterns))

    def __bool__(self) -> bool:
        return bool(self.forms)

    def text(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text

    def value(self, value: Any, *, keys: bool = True) -> Any:
        """`value` (JSON) with every string scrubbed.

        Object keys are scrubbed too, unless `keys` is False.
        """
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {(self.text(str(k)) if keys else k): self.value(v, keys=keys) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item, keys=keys) for item in value]
        if isinstance(value, int | float) and not isinstance(value, bool) and self.text(json.dumps(value)) == REDACTED:
            return REDACTED
        return copy.deepcopy(value)

    def result(self, result: types.CallToolResult) -> types.CallToolResult:
        """`result` with redacted values scrubbed from content, structured content and metadata."""
        if not self.forms:
            return result
        dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        scrubbed = self.value(dumped)
        return result if scrubbed == dumped else types.CallToolResult.model_validate(scrubbed)


class Redaction:
    """One call's arguments under a rule's `redact` paths: what is shown, what is approved."""

    def __init__(self, arguments: Mapping[str, Any], patterns: tuple[str, ...]) -> None:
        self.arguments = dict(arguments)
        self.patterns = patterns

    @cached_property
    def scrubber(self) -> Scrubber:
        return Scrubber.of(self.arguments, self.patterns)

    @cached_property
    def shown(self) -> dict[str, Any]:
        """The arguments people see: redacted by path, then every redacted value by value."""
        return dict(self.scrubber.value(redacted(self.arguments, self.patterns), keys=False))

    @property
    def editable(self) -> list[str]:
        """The shown arguments, where one holding anything redacted is never edited."""
        return [key for key, value in self.arguments.items() if self.shown.get(key) == value]

    def approved(self, decided: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments `decided`, edits applied, non-editable ones kept as given."""
        out = with_redacted_restored(self.arguments, decided, self.patterns)
        for key, value in self.arguments.items():
            if self.shown.get(key) != value:
                out[key] = copy.deepcopy(value)
        return out
