"""How many elicitations an upstream may put to people, so one call cannot flood a channel.

Each upstream's `elicitations` in the rules file caps them per tool call and per minute.
`per_call` is 3 by default, and `per_minute` 10. Past either cap the upstream gets `decline` at
once. Nobody is asked, and the log says why.
"""

from __future__ import annotations

import time
from collections import deque

from bot.mcp.rules import ElicitationLimits, RulesConfig

WINDOW = 60.0


class Budget:
    def __init__(self, config: RulesConfig) -> None:
        self.config = config
        self._per_call: dict[int, int] = {}
        self._recent: dict[str, deque[float]] = {}

    def spend(self, upstream: str, call: object | None) -> str | None:
        """Take one elicitation of `upstream`, within `call` when known.

        Past a cap, it returns why not.
        """
        known = self.config.upstreams.get(upstream)
        limits = known.elicitations if known is not None else ElicitationLimits()
        now = time.monotonic()
        recent = self._recent.setdefault(upstream, deque())
        while recent and recent[0] <= now - WINDOW:
            recent.popleft()
        key = id(call) if call is not None else None
        if key is not None and self._per_call.get(key, 0) >= limits.per_call:
            return f"one call may put at most {limits.per_call} elicitation(s) to people (`elicitations.per_call`)"
        if len(recent) >= limits.per_minute:
            return f"{upstream} may put at most {limits.per_minute} elicitation(s) a minute to people"
        recent.append(now)
        if key is not None:
            self._per_call[key] = self._per_call.get(key, 0) + 1
        return None

    def done(self, call: object) -> None:
        """`call` has ended: its count goes."""
        self._per_call.pop(id(call), None)
