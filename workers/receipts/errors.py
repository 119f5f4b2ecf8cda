"""The one error a receipt check raises, whose message is the one-line verdict."""

from __future__ import annotations

from workers.exceptions import ParleyError


class ReceiptError(ParleyError):
    """A receipt or audit line that does not verify.

    The message says why, in plain words.
    """
