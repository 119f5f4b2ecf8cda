"""`.env`: the settings file `parley slack setup` writes and every `parley` command reads.

Only the keys given change. Every other line stays as it was, comments and other settings alike.
The new file is written whole with mode 0600 and renamed over the old one. So it is never
half-written. Nor is it readable by anyone but its owner, even for a moment.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from dotenv import dotenv_values

MODE = 0o600
_KEY_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")
_BARE = re.compile(r"[A-Za-z0-9_.:/@+,-]+")


def mask(secret: str) -> str:
    """A token or secret as it may be shown: kind and last four characters (`xoxb-…a1b2`)."""
    head = secret.split("-", 1)[0]
    kind = head + "-" if "-" in secret and len(head) <= 10 else ""
    return f"{kind}…{secret[-4:]}" if len(secret) >= len(kind) + 12 else f"{kind}…"


def _quoted(value: str) -> str:
    if _BARE.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class EnvFile:
    """One `.env` file: its values as pydantic-settings reads them, and key-by-key updates."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def values(self) -> dict[str, str]:
        """Its settings by upper-case name, empty if there is no file.

        Settings names are not case-sensitive.
        """
        if not self.path.is_file():
            return {}
        return {k.upper(): v for k, v in dotenv_values(self.path).items() if v is not None}

    def update(self, changes: dict[str, str]) -> None:
        """Set each of `changes`, keeping mode 0600.

        A key already there is set in place. Otherwise it is appended.
        """
        wanted = {key.upper(): value for key, value in changes.items()}
        lines = self.path.read_text(encoding="utf-8").splitlines() if self.path.is_file() else []
        written: set[str] = set()
        for n, line in enumerate(lines):
            match = _KEY_LINE.match(line)
            key = match[1].upper() if match else ""
            if key in wanted:
                lines[n] = f"{key}={_quoted(wanted[key])}"
                written.add(key)
        lines += [f"{key}={_quoted(value)}" for key, value in wanted.items() if key not in written]
        self._replace("".join(f"{line}\n" for line in lines))

    def _replace(self, text: str) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, MODE)
        try:
            os.fchmod(fd, MODE)  # whatever the umask
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
