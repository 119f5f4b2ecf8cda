"""Secret answers at rest: sealed with Fernet under `PARLEY_SECRET_KEY`, opened only for the run.

A secret answer (`ItemType.SECRET`) is never written to Redis in the clear. The store keeps
the question's answers with the value replaced by `SECRET_MASK` (so history, `parley runs
show`, the Inspect view and the locked message have nothing to show) and the values
themselves in the run's `secrets` hash, one Fernet token per question. Fernet
(`cryptography`) is authenticated encryption with a versioned token format; nothing here is
written by hand beyond choosing what goes in the token.
"""

from __future__ import annotations

import json

from cryptography.fernet import Fernet, InvalidToken

from workers.exceptions import SecretUnreadable
from workers.interaction import Answer


class SecretBox:
    """Seals and opens the secret values of one question's answers."""

    def __init__(self, key: str) -> None:
        try:
            self._fernet = Fernet(key.encode() if isinstance(key, str) else key)
        except (ValueError, TypeError):
            raise ValueError("must be a Fernet key: 32 url-safe base64-encoded bytes (44 characters)") from None

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
                "it was sealed with another key (every bot and worker needs the same key)"
            ) from None


def split(answers: list[Answer]) -> tuple[list[Answer], dict[str, str]]:
    """The answers as they may be stored (secrets masked), and the secret values by item id."""
    secrets = {a.id: a.secret for a in answers if a.secret is not None}
    return [a.masked() for a in answers], secrets
