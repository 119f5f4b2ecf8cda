"""The `Decision` a Temporal workflow's `approve` returns: the port's, with its signed receipt.

The receipt arrives in the outcome's signal, which Temporal keeps in the workflow's history.
Reading it from there issues no command, so a replay returns the same decision.
"""

from __future__ import annotations

from typing import Any

from workers.interaction import Decision as PortDecision


class Decision(PortDecision):
    """An approval's decision, with its signed receipt (None where Parley signs none).

    The name and field match `parley.client.Decision`, the HTTP client's decision.
    """

    receipt: dict[str, Any] | None = None
    """The receipt as `GET /api/v1/questions/{id}/receipt` gives it (docs/receipts.md)."""
