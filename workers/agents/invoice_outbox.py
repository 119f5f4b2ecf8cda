"""`pai_invoice`'s outbox: invoices sent, one JSON line each, in the data directory.

It is kept apart so the agent module and its Pydantic AI tool share it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import time
from pathlib import Path
from typing import Any


def outbox_path(data_dir: Path) -> Path:
    return data_dir / "invoices" / "outbox.jsonl"


def read_outbox(data_dir: Path) -> list[dict[str, Any]]:
    path = outbox_path(data_dir)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def send(data_dir: Path, fields: dict[str, Any], run_id: str, call_id: str) -> dict[str, Any]:
    """Write the invoice to the outbox and return it.

    A second send of one tool call returns the first.
    """
    path = outbox_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    number = "INV-" + hashlib.sha256(f"{run_id}/{call_id}".encode()).hexdigest()[:8].upper()
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        for line in fh:
            if line.strip() and (sent := json.loads(line))["number"] == number:
                return dict(sent)
        invoice = {"number": number, "run_id": run_id, "sent_at": time.time(), **fields}
        fh.write(json.dumps(invoice, ensure_ascii=False) + "\n")
        fh.flush()
    return invoice
