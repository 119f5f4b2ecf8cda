"""A local issue tracker: tickets as JSON lines in one file, safe across processes."""

from __future__ import annotations

import fcntl
import json
import time
from pathlib import Path
from typing import Any


def tickets_path(data_dir: Path) -> Path:
    return data_dir / "tickets.jsonl"


def create_ticket(path: Path, fields: dict[str, Any]) -> dict[str, Any]:
    """Append a ticket with the next id (`PAR-<n>`) and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        count = sum(1 for line in fh if line.strip())
        ticket = {"id": f"PAR-{count + 1}", "created_at": time.time(), **fields}
        fh.write(json.dumps(ticket, ensure_ascii=False) + "\n")
        fh.flush()
    return ticket


def read_tickets(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
