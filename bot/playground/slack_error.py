"""The stand-in's Slack-level failure, which Web API methods raise to answer `ok: false`."""

from __future__ import annotations

from typing import Any

from workers.exceptions import ParleyError


class SlackError(ParleyError):
    """A Slack-level failure, answered as HTTP 200 ``{"ok": false, "error": code, **extra}``."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra
