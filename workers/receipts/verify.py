"""Checking receipts offline: one receipt's signature and digests, an audit log's chains."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from workers.receipts.canonical import sha256
from workers.receipts.dsse import open_envelope, parse
from workers.receipts.errors import ReceiptError
from workers.receipts.keys import KeyRing
from workers.receipts.statement import PREDICATE_TYPE, STATEMENT_TYPE


def statement_of(envelope: dict[str, Any]) -> dict[str, Any]:
    """The statement an envelope carries, unverified, for listings.

    {} when it cannot be read.
    """
    try:
        body = json.loads(base64.b64decode(envelope["payload"]))
    except (KeyError, TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def closed_at(predicate: dict[str, Any]) -> float:
    """When a receipt's question closed, per its predicate's `when.closed` (0 if unsaid)."""
    closed = (predicate.get("when") or {}).get("closed")
    try:
        return datetime.fromisoformat(str(closed).replace("Z", "+00:00")).timestamp() if closed else 0.0
    except ValueError:
        return 0.0


@dataclass(frozen=True)
class Verified:
    """A verified receipt: its statement, its payload's digest, its signing key."""

    statement: dict[str, Any]
    digest: str

    @property
    def predicate(self) -> dict[str, Any]:
        predicate: dict[str, Any] = self.statement["predicate"]
        return predicate


def verify_envelope(envelope: dict[str, Any], ring: KeyRing, claimed: str | None = None) -> Verified:
    """Check the signature, key id, statement shape and any claimed digest."""
    payload = open_envelope(envelope, ring)
    try:
        body = json.loads(payload)
    except ValueError:
        raise ReceiptError("not a receipt: the signed payload is not JSON") from None
    if not isinstance(body, dict) or body.get("_type") != STATEMENT_TYPE:
        raise ReceiptError("not a receipt: the payload is not an in-toto Statement v1")
    if body.get("predicateType") != PREDICATE_TYPE or not isinstance(body.get("predicate"), dict):
        raise ReceiptError(f"not a receipt: predicate type {body.get('predicateType')!r}")
    digest = sha256(payload)
    if claimed is not None and claimed != digest:
        raise ReceiptError("digest mismatch: the receipt's digest is not that of its signed payload")
    return Verified(body, digest)


NO_WORKSPACE = "-"
"""How a chain without a workspace is named outside the signature; signed, it is ""."""


def verify_text(text: str | bytes, ring: KeyRing) -> Verified:
    """A receipt as a file holds it: a DSSE envelope, or the API's answer (an audit log's line).

    The API answers with the envelope, its digest, and the question, run, workspace and place in
    the chain it belongs to. Each of those given must be what the signed statement says. Else a
    receipt copied onto another question would read as that question's.
    """
    outer = parse(text)
    wrapped = json.loads(text)
    claimed = None
    if isinstance(wrapped, dict) and isinstance(wrapped.get("digest"), dict):
        claimed = str(wrapped["digest"].get("sha256", ""))
    verified = verify_envelope(outer, ring, claimed)
    if isinstance(wrapped, dict) and "envelope" in wrapped:
        _same_as_signed(wrapped, verified.predicate)
    return verified


def _same_as_signed(wrapped: dict[str, Any], predicate: dict[str, Any]) -> None:
    """Refuse a wrapper field that says other than the signed predicate."""
    given_question = predicate.get("question")
    question: dict[str, Any] = given_question if isinstance(given_question, dict) else {}
    signed = {
        "question_id": question.get("id"),
        "run_id": question.get("run_id"),
        "workspace": predicate.get("workspace") or NO_WORKSPACE,
        "sequence": predicate.get("sequence"),
    }
    for field, value in signed.items():
        given = wrapped.get(field)
        if field == "workspace" and given == "":
            given = NO_WORKSPACE
        if field in wrapped and given != value:
            raise ReceiptError(f"{field} {given!r} is not the signed {value!r}: the receipt belongs elsewhere")


@dataclass
class _Link:
    digest: str
    sequence: int
    line: int


def verify_log(lines: Iterable[str], ring: KeyRing) -> int:
    """Check every receipt of an audit log and each workspace's chain.

    Returns how many receipts there were. `ReceiptError` names the first bad line. A line is bad
    when it does not verify, or a receipt is missing (a gap in the sequence). It is also bad when
    two are out of order, or two claim the same predecessor. Each workspace's first receipt is taken
    as it is, since retention may have purged earlier ones.
    """
    heads: dict[str, _Link] = {}
    seen: dict[str, int] = {}
    count = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            verified = verify_text(text, ring)
        except ReceiptError as exc:
            raise ReceiptError(f"line {number}: {exc}") from None
        predicate = verified.predicate
        workspace = str(predicate.get("workspace") or "")
        sequence = predicate.get("sequence")
        previous = (predicate.get("previous") or {}).get("sha256")
        if verified.digest in seen:
            raise ReceiptError(f"line {number}: the same receipt as line {seen[verified.digest]}")
        seen[verified.digest] = number
        head = heads.get(workspace)
        if head is not None and not isinstance(sequence, int):
            raise ReceiptError(f"line {number}: the receipt has no sequence number")
        if head is not None and previous != head.digest:
            if isinstance(sequence, int) and sequence <= head.sequence:
                raise ReceiptError(
                    f"line {number}: out of order or forked: receipt {sequence} of {workspace or 'no workspace'} "
                    f"follows receipt {head.sequence} (line {head.line})"
                )
            raise ReceiptError(
                f"line {number}: chain broken: its previous receipt is not line {head.line}; "
                f"receipt(s) {head.sequence + 1}..{int(sequence or 0) - 1} missing or changed"
            )
        if head is not None and sequence != head.sequence + 1:
            raise ReceiptError(f"line {number}: sequence {sequence} does not follow {head.sequence}")
        heads[workspace] = _Link(verified.digest, int(sequence or 0), number)
        count += 1
    return count
