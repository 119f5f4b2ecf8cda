"""The gateway's receipt in a forwarded call's `_meta`, and an upstream's check of it.

The gateway forwards an approved call with its receipt (`RECEIPT`) and digest (`DIGEST`) in
`_meta`. An upstream holding Parley's public keys checks it with `check_call`. That shows a
person approved exactly the arguments received. The digest covers the arguments as shown. For a
rule that redacts values, the check compares against the shown form.

The receipt names the tool as the gateway shows it (`Call <upstream>.<tool>`). Given `tool`, the
check refuses a receipt for another tool, and given `max_age`, one closed longer ago. A receipt
is not used up: an upstream that must act once per approval remembers `question.id`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from workers.receipts.canonical import digest
from workers.receipts.errors import ReceiptError
from workers.receipts.keys import KeyRing
from workers.receipts.verify import Verified, closed_at, verify_envelope

RECEIPT = "parley/receipt"
DIGEST = "parley/receipt_digest"
APPROVED = ("approved", "edited")


def call_meta(line: Mapping[str, Any]) -> dict[str, Any]:
    """The `_meta` of a call forwarded after approval: the receipt and its digest."""
    return {RECEIPT: dict(line), DIGEST: line["digest"]["sha256"]}


def check_call(
    meta: Mapping[str, Any] | None,
    arguments: Mapping[str, Any],
    ring: KeyRing,
    *,
    tool: str | None = None,
    max_age: float | None = None,
) -> Verified:
    """The verified receipt, when it approves exactly `arguments` (for `tool`, within `max_age` s).

    Otherwise `ReceiptError` says why not.
    """
    line = (meta or {}).get(RECEIPT)
    if not isinstance(line, Mapping) or not isinstance(line.get("envelope"), Mapping):
        raise ReceiptError("no receipt in the call's _meta: it was not approved through Parley")
    claimed = (line.get("digest") or {}).get("sha256")
    verified = verify_envelope(dict(line["envelope"]), ring, claimed)
    if (meta or {}).get(DIGEST) != verified.digest:
        raise ReceiptError("the _meta digest is not the receipt's")
    predicate = verified.predicate
    approval = predicate.get("approval")
    if predicate.get("outcome") not in APPROVED or not isinstance(approval, Mapping):
        raise ReceiptError(f"the receipt does not approve this call: it says {predicate.get('outcome')}")
    if approval.get("arguments_digest") != digest(dict(arguments)):
        raise ReceiptError("the arguments differ from the ones a person approved")
    action = str(approval.get("action") or "")
    if tool is not None and action != f"Call {tool}" and not action.endswith(f".{tool}"):
        raise ReceiptError(f"the receipt approves {action!r}, not a call of {tool!r}")
    if max_age is not None and time.time() - closed_at(predicate) > max_age:
        raise ReceiptError(f"the approval is older than {max_age:g} s")
    return verified
