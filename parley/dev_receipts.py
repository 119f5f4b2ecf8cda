"""`parley dev`'s receipt signing key, made once in the data folder (mode 0600), then reused."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from workers.receipts import Signer

RECEIPT_KEY_FILE = "receipt-key.pem"


def playground_receipt_key(data_dir: Path) -> Path:
    """The path of the playground's Ed25519 receipt key.

    It is written whole beside that path, then linked.
    """
    path = data_dir / RECEIPT_KEY_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        draft = data_dir / f".{RECEIPT_KEY_FILE}.{os.getpid()}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(Signer.generate().private_pem())
        with contextlib.suppress(FileExistsError):  # another start made it first: use theirs
            os.link(draft, path)
        draft.unlink()
    return path
