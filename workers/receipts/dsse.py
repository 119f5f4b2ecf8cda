"""DSSE envelopes signed with Ed25519.

The pre-authentication encoding (PAE) is written here, as four lines of the DSSE spec.
`securesystemslib`'s envelope brings its own signer and key formats, which we do not use. The
envelope is the spec's JSON, so in-toto tooling reads it as is.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from cryptography.exceptions import InvalidSignature

from workers.receipts.errors import ReceiptError
from workers.receipts.keys import KeyRing, Signer

PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding of a payload and its type."""
    kind = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


def sign(payload: bytes, signer: Signer, payload_type: str = PAYLOAD_TYPE) -> dict[str, Any]:
    """A DSSE envelope of `payload`, signed by `signer`."""
    signature = signer.sign(pae(payload_type, payload))
    return {
        "payloadType": payload_type,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": signer.keyid, "sig": base64.b64encode(signature).decode()}],
    }


def parse(text: str | bytes) -> dict[str, Any]:
    """An envelope read from JSON text.

    `ReceiptError` says what is wrong with it.
    """
    try:
        envelope = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ReceiptError(f"not a receipt: the JSON does not parse ({exc})") from None
    if not isinstance(envelope, dict):
        raise ReceiptError("not a receipt: expected a JSON object (a DSSE envelope)")
    if isinstance(envelope.get("envelope"), dict):  # the API's answer wraps the envelope
        envelope = envelope["envelope"]
    for name in ("payloadType", "payload", "signatures"):
        if name not in envelope:
            raise ReceiptError(f"not a receipt: the envelope has no {name!r}")
    return envelope


def open_envelope(envelope: dict[str, Any], ring: KeyRing) -> bytes:
    """The payload of `envelope`, once a signature verifies with a key of `ring`."""
    try:
        payload = base64.b64decode(envelope["payload"], validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise ReceiptError("not a receipt: the payload is not base64") from None
    if envelope["payloadType"] != PAYLOAD_TYPE:
        raise ReceiptError(f"not a receipt: payload type {envelope['payloadType']!r}")
    signatures = envelope["signatures"]
    if not isinstance(signatures, list) or not signatures:
        raise ReceiptError("not signed: the envelope has no signatures")
    message = pae(envelope["payloadType"], payload)
    unknown: list[str] = []
    for entry in signatures:
        keyid = str(entry.get("keyid", "")) if isinstance(entry, dict) else ""
        key = ring.get(keyid)
        if key is None:
            unknown.append(keyid or "(none)")
            continue
        try:
            key.verify(base64.b64decode(str(entry.get("sig", "")), validate=True), message)
        except (InvalidSignature, binascii.Error, ValueError):
            raise ReceiptError(f"bad signature: key {keyid[:16]} did not sign this receipt") from None
        return payload
    raise ReceiptError(f"unknown key id {', '.join(k[:16] for k in unknown)}: not among the trusted keys")
