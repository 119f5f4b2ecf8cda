"""The audit log: each workspace's chain of receipts as JSON lines, oldest first.

With `PARLEY_REDIS_MIN_REPLICAS` set, a chain is exported up to its head only once replicas
hold that head, so an exported log never holds a receipt a failover could lose.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from workers.receipts.verify import closed_at, statement_of
from workers.store.receipts import ReceiptBook


def export_lines(book: ReceiptBook, team: str | None = None, since: float | None = None) -> Iterator[str]:
    """One JSON line per receipt, chain by chain.

    `team` picks one workspace's. `since` keeps only later closes. `ReceiptUnconfirmed` comes
    before any line while replicas do not hold a chain's head yet.
    """
    workspaces = [team] if team else book.workspaces()
    heads = {workspace: book.confirmed_head(workspace) for workspace in workspaces}  # before any line
    for workspace, upto in heads.items():
        for receipt in book.chain(workspace):
            if receipt.sequence > upto:
                break  # written after the head was confirmed: the next export has it
            if since is not None and closed_at(statement_of(receipt.envelope).get("predicate", {})) < since:
                continue
            yield json.dumps(receipt.line(), separators=(",", ":"))
