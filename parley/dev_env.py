"""The settings `parley dev` gives its pieces, which a deployment sets by hand.

In the playground, webhooks to loopback on any port are allowed. Secret answers are sealed with
a key kept in the data folder. With no model configured, agents needing one talk to the
playground's scripted model. Each applies only where the person set nothing.
"""

from __future__ import annotations

import base64
import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from bot.playground.scripted_model import SCRIPTED_PATH
from workers.llm.client import ENV_BASE_URL, ENV_MODEL

SECRET_KEY_FILE = "playground-secret.key"
SCRIPTED_MODEL = "scripted"
"""The model name the playground's scripted model answers to."""


def playground_secret_key(data_dir: Path) -> str:
    """The playground's Fernet key, made once in the data folder (mode 0600), then reused."""
    path = data_dir / SECRET_KEY_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    if not path.exists():  # written whole beside it, then linked: never seen half-written
        draft = data_dir / f".{SECRET_KEY_FILE}.{os.getpid()}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(base64.urlsafe_b64encode(os.urandom(32)) + b"\n")  # what Fernet.generate_key() makes
        with contextlib.suppress(FileExistsError):  # another start made it first: use theirs
            os.link(draft, path)
        draft.unlink()
    return path.read_text().strip()


def scripted_model(environ: Mapping[str, str], base_url: str) -> dict[str, str]:
    """Model settings pointing at the scripted model, unless the person configured one."""
    if environ.get(ENV_BASE_URL, "").strip() or environ.get(ENV_MODEL, "").strip():
        return {}
    return {ENV_BASE_URL: base_url + SCRIPTED_PATH, ENV_MODEL: SCRIPTED_MODEL}
