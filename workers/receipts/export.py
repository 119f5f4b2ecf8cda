"""The audit log: each workspace's chain of receipts as JSON lines, oldest first."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

from workers.receipts.verify import statement_of
from workers.store.receipts import Receipt, ReceiptBook


def closed_at(receipt: Receipt) -> float:
    """When the receipt's question closed, from its statement (0 when it does not say)."""
    closed = (statement_of(receipt.envelope).get("predicate", {}).get("when") or {}).get("closed")
    try:
        return datetime.fromisoformat(str(closed).replace("Z", "+00:00")).timestamp() if closed else 0.0
    except ValueError:
        return 0.0


def export_lines(book: ReceiptBook, team: str | None = None, since: float | None = None) -> Iterator[str]:
    """One JSON line per receipt, chain by chain; `team` one workspace's, `since` only later closes."""
    workspaces = [team] if team else book.workspaces()
    for workspace in workspaces:
        for receipt in book.chain(workspace):
            if since is not None and closed_at(receipt) < since:
                continue
            yield json.dumps(receipt.line(), separators=(",", ":"))
