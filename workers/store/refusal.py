"""`Refusal`: why an answer, expiry or cancel was not accepted, as one typed value.

It carries the closing script's reply through to the words a host shows. The store decodes a
script's reply into it (`Refusal.from_reply`). Acceptance adds what only it knows: the
assignees, and the labels of invalid items. Each host words it in one place. For Slack that is
`bot/slack/refusals.py`. For the terminal and command line, it is
`workers.runtime.acceptance.plain_text`. Each field is set for the reasons that say it, and left
empty otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workers.store.records import RefusalReason
from workers.store.replies import as_text

POSTING = "posting"
"""`Refusal.status` of a `NOT_OPEN` question that is still being posted."""


@dataclass(frozen=True)
class Refusal:
    """Why a close was refused, with nothing written.

    `UNCONFIRMED` is the exception (see `replicas`).
    """

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
        reason = RefusalReason(as_text(reply[1]))
        detail = [as_text(x) for x in reply[2:]]
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
