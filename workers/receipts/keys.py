"""Ed25519 receipt keys: the signing key, and trusted public keys by key id.

A key id is the sha256 of the public key's raw 32 bytes, in hex. Verifiers hold several public
keys. So receipts signed before a rotation keep verifying after it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from workers.receipts.errors import ReceiptError

_PUBLIC_BEGIN = b"-----BEGIN PUBLIC KEY-----"


def keyid(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def public_pem(public: Ed25519PublicKey) -> str:
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return pem.decode()


class Signer:
    """The private key receipts are signed with (`PARLEY_RECEIPT_KEY`)."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        self.public = private.public_key()
        self.keyid = keyid(self.public)

    def __repr__(self) -> str:
        return f"Signer(keyid={self.keyid[:16]})"

    @classmethod
    def generate(cls) -> Signer:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, pem: bytes) -> Signer:
        """A signer from PKCS#8 PEM.

        Raises `ReceiptError` when it is not an Ed25519 private key.
        """
        try:
            private = serialization.load_pem_private_key(pem, password=None)
        except (ValueError, TypeError) as exc:
            raise ReceiptError(f"the receipt key is not a PEM private key ({str(exc).splitlines()[0]})") from None
        if not isinstance(private, Ed25519PrivateKey):
            raise ReceiptError("the receipt key must be an Ed25519 key")
        return cls(private)

    def private_pem(self) -> bytes:
        return self._private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)


class KeyRing:
    """Public keys by key id: the ones a verifier trusts."""

    def __init__(self, keys: list[Ed25519PublicKey] | None = None) -> None:
        self._keys: dict[str, Ed25519PublicKey] = {}
        for key in keys or []:
            self.add(key)

    def add(self, key: Ed25519PublicKey) -> str:
        kid = keyid(key)
        self._keys[kid] = key
        return kid

    def merge(self, other: KeyRing) -> None:
        self._keys.update(other._keys)

    def get(self, kid: str) -> Ed25519PublicKey | None:
        return self._keys.get(kid)

    def __len__(self) -> int:
        return len(self._keys)

    def listing(self) -> list[dict[str, str]]:
        """The keys as published (`GET /api/v1/receipts/keys`): key id, algorithm, PEM."""
        return [{"keyid": k, "algorithm": "ed25519", "pem": public_pem(v)} for k, v in sorted(self._keys.items())]

    @classmethod
    def from_pem_text(cls, text: bytes) -> KeyRing:
        """Every public key in the PEM blocks of `text`.

        A private key counts by its public half.
        """
        ring = cls()
        blocks = [b"-----BEGIN" + part for part in text.split(b"-----BEGIN")[1:]]
        for block in blocks:
            try:
                if block.startswith(_PUBLIC_BEGIN):
                    key = serialization.load_pem_public_key(block)
                else:
                    key = serialization.load_pem_private_key(block, password=None).public_key()
            except (ValueError, TypeError):
                raise ReceiptError("the keys file holds a PEM block that is not a key") from None
            if not isinstance(key, Ed25519PublicKey):
                raise ReceiptError("the keys file holds a key that is not Ed25519")
            ring.add(key)
        if not ring:
            raise ReceiptError("the keys file holds no PEM public key")
        return ring

    @classmethod
    def from_files(cls, paths: list[Path]) -> KeyRing:
        ring = cls()
        for path in paths:
            try:
                text = path.read_bytes()
            except OSError as exc:
                raise ReceiptError(f"cannot read keys file {path}: {exc.strerror}") from None
            ring.merge(cls.from_pem_text(text))
        return ring
