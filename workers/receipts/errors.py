"""The one error a receipt check raises: its message is the verdict, in one line."""

from __future__ import annotations

from workers.exceptions import ParleyError


class ReceiptError(ParleyError):
    """A receipt or an audit line that does not verify; the message says why, in plain words."""
