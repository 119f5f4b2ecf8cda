"""Secret answers at rest: sealed with Fernet under `PARLEY_SECRET_KEY`, opened only for the run.

A secret answer (`ItemType.SECRET`) is never written to Redis in the clear. The store keeps the
answers with the value replaced by `SECRET_MASK`. So history, `parley runs show`, Inspect and
the locked message have nothing to show. The values themselves go in the run's `secrets` hash,
one Fernet token per question. Fernet (`cryptography`) is authenticated encryption with a
versioned token format. Nothing here is hand-written beyond choosing what goes in the token.

`PARLEY_SECRET_KEY` may hold several comma-separated keys for rotation (`MultiFernet`). The
first seals, and every one opens. A sealed copy lives only as long as its run, or its API
question's reveal. Once all copies under an old key are gone, that key is dropped from the list.
Copies left on disk (AOF, RDB, backups) can then no longer be opened.
"""

from __future__ import annotations

import json

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from workers.exceptions import SecretUnreadable
from workers.interaction import Answer


class SecretBox:
    """Seals and opens the secret values of one question's answers."""

    def __init__(self, key: str) -> None:
        """`key`: one Fernet key, or several comma-separated (the first seals, all open)."""
        parts = [p.strip() for p in (key.decode() if isinstance(key, bytes) else str(key)).split(",")]
        fernets: list[Fernet] = []
        for n, part in enumerate(parts, 1):
            try:
                fernets.append(Fernet(part.encode()))
            except (ValueError, TypeError):
                which = f"key {n} of {len(parts)} " if len(parts) > 1 else ""
                raise ValueError(
                    f"{which}must be a Fernet key: 32 url-safe base64-encoded bytes (44 characters)"
                ) from None
        self._fernet = MultiFernet(fernets)

    def __repr__(self) -> str:
        return "SecretBox(<key hidden>)"

    def seal(self, values: dict[str, str]) -> str:
        """One token holding `{item_id: value}`."""
        return self._fernet.encrypt(json.dumps(values).encode()).decode()

    def open(self, token: str) -> dict[str, str]:
        try:
            return dict(json.loads(self._fernet.decrypt(token.encode())))
        except InvalidToken:
            raise SecretUnreadable(
                "a secret answer cannot be opened with this PARLEY_SECRET_KEY: "
                "it was sealed with another key (every bot and worker needs the same keys)"
            ) from None


def split(answers: list[Answer]) -> tuple[list[Answer], dict[str, str]]:
    """The answers as storable (secrets masked), and the secret values by item id."""
    secrets = {a.id: a.secret for a in answers if a.secret is not None}
    return [a.masked() for a in answers], secrets
