"""`Refusal`: why an answer (or an expiry, or a cancel) was not accepted, one typed value from the
closing script's reply to the words a host shows.

The store decodes a script's reply into it (`Refusal.from_reply`), acceptance adds what only it
knows (the assignees, the labels of invalid items), and each host words it in one place
(`bot/slack/refusals.py` for Slack, `workers.runtime.acceptance.plain_text` for the terminal and
the command line). Each field is set for the reasons that say it and left empty otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workers.store.records import RefusalReason

POSTING = "posting"
"""`Refusal.status` of a `NOT_OPEN` question that is still being posted."""


@dataclass(frozen=True)
class Refusal:
    """Why a close was refused; nothing was written, except for `UNCONFIRMED` (see `replicas`)."""

    reason: RefusalReason
    by: str = ""  # ANSWERED: who answered; CANCELLED: who cancelled
    at: float | None = None  # ANSWERED: when; EXPIRED, NOT_DUE: the deadline
    status: str = ""  # NOT_OPEN: the run's status, or `POSTING` when the question is still being posted
    assignees: tuple[str, ...] = ()  # NOT_ALLOWED: who may answer
    team: str = ""  # WRONG_TEAM: the question's workspace
    payload_team: str = ""  # WRONG_TEAM: the workspace the answer came from
    channel: str = ""  # WRONG_PLACE: where the question is
    errors: Mapping[str, str] = field(default_factory=dict)  # INVALID: the problem of each item id
    labels: Mapping[str, str] = field(default_factory=dict)  # INVALID: each item's label, by its id
    message: str = ""  # AMBIGUOUS: what did not match; UNAVAILABLE: what failed
    replicas: int = 0  # UNCONFIRMED: how many replicas confirmed the accepted answer in time
    again: bool = False  # UNCONFIRMED: the answer was already the question's (a resubmission)

    @classmethod
    def from_reply(cls, reply: Sequence[Any]) -> Refusal:
        """A closing script's refusal, `{0, reason, detail...}` (see `scripts.CLOSE`), decoded."""
        reason = RefusalReason(_s(reply[1]))
        detail = [_s(x) for x in reply[2:]]
        first = detail[0] if detail else ""
        if reason is RefusalReason.ANSWERED:
            return cls(reason, by=first, at=_float(detail[1] if len(detail) > 1 else ""))
        if reason is RefusalReason.CANCELLED:
            return cls(reason, by=first)
        if reason in (RefusalReason.EXPIRED, RefusalReason.NOT_DUE):
            return cls(reason, at=_float(first))
        if reason is RefusalReason.NOT_OPEN:
            return cls(reason, status=first)
        if reason is RefusalReason.NOT_ALLOWED:
            return cls(reason, assignees=tuple(json.loads(first)) if first else ())
        return cls(reason)


def _float(raw: str) -> float | None:
    return float(raw) if raw else None


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
