"""What this process set up in Slack lately: channels it joined and run threads it started.

Both spare a run's cycle a call. A worker posts every run of a busy channel there.
`conversations.join` before each root message is an HTTP round trip, changing nothing once
Parley is a member. A run's thread is started once. The execution that started it posts into it
next, without reading the run back from Redis.

Why not a library cache, like functools or cachetools? The join entries expire on a clock, and
the thread entries are bounded by count. Both are guarded for the bot's threads. Two small
classes say that more plainly than a dependency.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

JOIN_TTL = 600.0
"""Seconds a join is trusted. A removed bot re-joins within this long; until then a run it
starts there still posts (chat:write.public) and takes answers by button, but Slack does not
deliver the channel's thread replies to it."""

THREADS_KEPT = 4096


class JoinedChannels:
    """Public channels this process joined within the last `ttl` seconds."""

    def __init__(self, ttl: float = JOIN_TTL) -> None:
        self._ttl = ttl
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def fresh(self, channel: str) -> bool:
        with self._lock:
            return self._until.get(channel, 0.0) > time.monotonic()

    def joined(self, channel: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._until = {c: t for c, t in self._until.items() if t > now}
            self._until[channel] = now + self._ttl


class StartedThreads:
    """The conversation (with `thread_ts`) of the runs whose threads this process started."""

    def __init__(self, kept: int = THREADS_KEPT) -> None:
        self._kept = kept
        self._convs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            conv = self._convs.get(run_id)
            return dict(conv) if conv is not None else None

    def started(self, run_id: str, conversation: dict[str, Any]) -> None:
        with self._lock:
            self._convs[run_id] = dict(conversation)
            self._convs.move_to_end(run_id)
            while len(self._convs) > self._kept:
                self._convs.popitem(last=False)
