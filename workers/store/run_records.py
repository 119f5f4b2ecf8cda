"""A run as Redis holds it: its status, its hash and its history.

The other record modules build on `Record`, the base every stored record shares.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from workers.store.pieces import gathered


class RunStatus(StrEnum):
    """Where a run is in its life, per the README's state machine."""

    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.EXPIRED})
LIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED)


class Record(BaseModel):
    """A stored record: fields Redis holds that it does not name are ignored."""

    model_config = ConfigDict(extra="ignore")


class RunRecord(Record):
    """The run hash, decoded."""

    id: str
    agent: str
    text: str = ""
    started_by: str
    conversation: dict[str, Any] = Field(default_factory=dict)
    status: RunStatus
    created_at: float
    updated_at: float
    epoch: int = 0
    failures: int = 0
    interrupt: str = ""
    result: str = ""
    error: str = ""
    lease_until: float = 0.0
    job: str = ""

    @classmethod
    def from_hash(cls, data: dict[str, str]) -> RunRecord:
        fields: dict[str, Any] = dict(data)
        fields["conversation"] = json.loads(gathered(data, "conversation") or "{}")
        return cls.model_validate(fields)

    @classmethod
    def unreadable(cls, run_id: str, data: dict[str, str], error: str) -> RunRecord:
        """A stand-in for an unreadable run hash, so a listing shows it and goes on."""

        def number(name: str) -> float:
            try:
                return float(data.get(name) or 0)
            except ValueError:
                return 0.0

        status = data.get("status", "")
        return cls(
            id=run_id,
            agent=data.get("agent") or "?",
            text=f"(unreadable record: {error})",
            started_by=data.get("started_by") or "?",
            status=RunStatus(status) if status in RunStatus._value2member_map_ else RunStatus.FAILED,
            created_at=number("created_at"),
            updated_at=number("updated_at"),
            error=f"this run's record cannot be read: {error}",
        )

    def log_context(self) -> dict[str, Any]:
        """The correlation fields every log line about this run carries."""
        ctx: dict[str, Any] = {"run_id": self.id, "agent": self.agent}
        for name in ("team", "channel"):
            if name in self.conversation:
                ctx[name] = self.conversation[name]
        if self.interrupt:
            ctx["interrupt_id"] = self.interrupt
        return ctx


class HistoryEntry(Record):
    """One line of a run's history: what happened, when, by whom."""

    at: float
    event: str
    by: str = ""
    detail: dict[str, Any] = Field(default_factory=dict)


STARTED = "started"
STARTED_FIELDS = ("created_at", "started_by", "agent", "text")
"""The run hash's fields its history's first entry, the start, is made from."""


def with_start(entries: list[HistoryEntry], run: dict[str, str | None]) -> list[HistoryEntry]:
    """A run's history led by its start, made from the run's hash (`STARTED_FIELDS`).

    The start repeats what the run's hash holds, so it is not stored: a list of one entry
    would cost a pending question a third of a kilobyte. Runs created before still have it first.
    """
    if (entries and entries[0].event == STARTED) or not run.get("created_at"):
        return entries
    detail = {"agent": run.get("agent") or "", "text": run.get("text") or ""}
    start = HistoryEntry(at=float(run["created_at"] or 0), event=STARTED, by=run.get("started_by") or "", detail=detail)
    return [start, *entries]
