"""How an API owner's `Idempotency-Key` is kept: one short string key per key, for a day.

The key's name carries the first 16 bytes of the key's sha256 (22 characters of base64url)
and its value `<question id> <body digest>`, the body's digest shortened the same way. Both
fit one small allocation: about 170 bytes of Redis per key, where the full hex digests and
a JSON value took about 300. 128 bits are ample to tell one owner's keys and bodies apart.

A key bound before this layout (the full hex digest in its name, JSON in its value) is still
found and honoured until it expires (`Binding.names`).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from workers.store import keys

TTL = 86400
"""An Idempotency-Key is remembered for a day."""


def short(hex_digest: str) -> str:
    """A sha256 in hex as its first 16 bytes in base64url, without padding (22 characters)."""
    return base64.urlsafe_b64encode(bytes.fromhex(hex_digest)[:16]).decode().rstrip("=")


@dataclass(frozen=True)
class Binding:
    """An Idempotency-Key (by its sha256) of one owner, to bind to a question made from a body (its digest)."""

    owner: str
    key_digest: str
    body_digest: str

    @property
    def name(self) -> str:
        """The key this version binds."""
        return keys.api_idempotency(self.owner, short(self.key_digest))

    @property
    def names(self) -> list[str]:
        """The key this version binds, then the one a version before would have bound."""
        return [self.name, keys.api_idempotency(self.owner, self.key_digest)]

    def value(self, question_id: str) -> str:
        """What the key holds once bound to `question_id`."""
        return f"{question_id} {short(self.body_digest)}"


@dataclass(frozen=True)
class Bound:
    """The question a key was bound to earlier, and whether that request's body was this one."""

    question_id: str
    same_body: bool


def bound(raw: str, binding: Binding) -> Bound:
    """What a key's value says, in this layout or the JSON of the one before."""
    if raw.startswith("{"):
        old = json.loads(raw)
        return Bound(str(old["question_id"]), old.get("body") == binding.body_digest)
    question_id, _, body = raw.partition(" ")
    return Bound(question_id, body == short(binding.body_digest))


def question_of(raw: str) -> str:
    """The question a key's value names, in either layout."""
    return str(json.loads(raw).get("question_id")) if raw.startswith("{") else raw.partition(" ")[0]
