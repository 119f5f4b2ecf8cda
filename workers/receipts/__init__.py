"""Signed decision receipts: a chained in-toto Statement per closed question, in a DSSE envelope.

A receipt says what was asked, what was decided, by whom and when. It is signed with an Ed25519
key. Each workspace's receipts form a chain by digest, so an audit log shows tampering. See
docs/receipts.md for the design and for verifying a receipt offline.
"""

from workers.receipts.errors import ReceiptError
from workers.receipts.keys import KeyRing, Signer

__all__ = ["KeyRing", "ReceiptError", "Signer"]
