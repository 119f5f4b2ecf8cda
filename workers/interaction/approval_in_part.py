"""Approval arguments too long to bind whole, shown in part and bound by digest.

An approval binds its arguments as canonical JSON of at most `CONTEXT_MAX` characters. With
`in_part`, each long value is shown by its start, with its sha256. The caller keeps the whole
arguments. It runs with `approved_args`, which puts each value shown in part back whole.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from workers.interaction.context import (
    CONTEXT_MAX,
    canonical,
    canonical_form,
    digest,
    json_problem,
    show_value,
    too_deep,
)
from workers.interaction.exceptions import ContextError

if TYPE_CHECKING:
    from workers.interaction.approval import Decision

__all__ = ["IN_PART", "approved_args", "bound_args", "shown_in_part"]

IN_PART = "(shown in part: the first {shown:,} of {total:,} characters)"
"""The note opening a value shown in part, before its start."""


def _too_long_only(args: Any, error: ContextError) -> str:
    """`args` as canonical JSON, when their length alone keeps them from being bound.

    Otherwise `error` is raised again. Args that are not plain JSON are never shown in part.
    """
    if not isinstance(args, dict) or too_deep(args) or json_problem(args, "args") is not None:
        raise error
    text = canonical_form(args)
    if len(text) <= CONTEXT_MAX:
        raise error
    return text


def _json_len(text: str) -> int:
    return len(json.dumps(text)) - 2


def _value_in_part(value: Any, room: int) -> str | None:
    """`value` as text of at most `room` characters of JSON: a note, its start, its sha256.

    None when not even the note and the digest fit.
    """
    text = value if isinstance(value, str) else show_value(value)
    tail = f"… (sha256 {digest(canonical_form(value))})"
    left = room - 2 - _json_len(IN_PART.format(shown=len(text), total=len(text)) + " " + tail)
    if left < 0:
        return None
    shown = 0
    for c in text:
        left -= _json_len(c)
        if left < 0:
            break
        shown += 1
    return f"{IN_PART.format(shown=shown, total=len(text))} {text[:shown]}{tail}"


def shown_in_part(args: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`args` as an approval shows and binds them, and the names shown in part.

    Args within `CONTEXT_MAX` characters of canonical JSON are returned whole. Otherwise the
    longest values become text, one more at a time. Each is a note, its start and its sha256. A
    change to a value changes its digest, so the binding holds. Args that are not plain JSON raise
    `ContextError`. So do args too long even then.
    """
    try:
        canonical(args)
        return dict(args), []
    except ContextError as exc:
        whole = _too_long_only(args, exc)
    longest = sorted(args, key=lambda n: len(canonical_form(args[n])), reverse=True)
    for count in range(1, len(longest) + 1):
        clipped = longest[:count]
        rest = len(canonical_form({n: "" if n in clipped else v for n, v in args.items()}))
        room = 2 + (CONTEXT_MAX - rest) // count  # each clipped value's share, its quotes counted in `rest`
        parts = {n: _value_in_part(args[n], room) for n in clipped}
        if all(p is not None for p in parts.values()):
            shown = {n: parts.get(n, v) for n, v in args.items()}
            canonical(shown)  # within CONTEXT_MAX by construction
            return shown, clipped
    raise ContextError(
        f"the arguments are {len(whole):,} characters of canonical JSON, and even with their long values "
        f"shown in part they take over the {CONTEXT_MAX:,} an approval shows; pass fewer arguments"
    )


def bound_args(args: dict[str, Any], in_part: bool) -> tuple[dict[str, Any], list[str]]:
    """The args an approval shows and is bound to, and those shown in part (see `shown_in_part`)."""
    if in_part:
        return shown_in_part(args)
    try:
        canonical(args)
    except ContextError as exc:
        whole = _too_long_only(args, exc)
        raise ContextError(
            f"the arguments are {len(whole):,} characters of canonical JSON, and an approval shows at most "
            f"{CONTEXT_MAX:,}: pass shorter ones"
        ) from None
    return args, []


def approved_args(decision: Decision, proposed: dict[str, Any]) -> dict[str, Any]:
    """The args to run with: the decision's, with each value shown in part put back whole.

    `proposed` holds the args as the approval was asked with them (`in_part`). Without values
    shown in part, these are `decision.args`.
    """
    _, in_part = shown_in_part(proposed)
    return {**decision.args, **{name: proposed[name] for name in in_part}}
