"""`Receipt`: one stored receipt as Redis holds it, and the API and the audit log show it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from workers.store.replies import as_text


@dataclass(frozen=True)
class Receipt:
    """One stored receipt: DSSE envelope, payload digest, place in its chain."""

    interrupt_id: str
    envelope: dict[str, Any]
    digest: str
    workspace: str
    sequence: int
    run_id: str = ""  # the run it was asked in; for the HTTP API, the question's own id

    def line(self) -> dict[str, Any]:
        """The receipt as one line of an audit log, and as the API serves it."""
        return {
            "question_id": self.interrupt_id,
            "run_id": self.run_id,
            "workspace": self.workspace,
            "sequence": self.sequence,
            "digest": {"sha256": self.digest},
            "envelope": self.envelope,
        }

    @classmethod
    def from_hash(cls, interrupt_id: str, data: dict[str, str]) -> Receipt:
        return cls(
            interrupt_id=interrupt_id,
            envelope=json.loads(data["envelope"]),
            digest=data["digest"],
            workspace=data["workspace"],
            sequence=int(data["sequence"]),
            run_id=data.get("run_id", ""),
        )


def pairs(flat: list[Any]) -> dict[str, str]:
    """A flat HGETALL reply from a script, as a dict of strings."""
    return {as_text(flat[i]): as_text(flat[i + 1]) for i in range(0, len(flat), 2)}
