"""What the check for ended Temporal workflows keeps in Redis: where it got to, and when it rests.

The check (`workers.questions.signal_watch`) reads the waiting questions a batch at a time, oldest
first. Its cursor says how far the last pass got. After Temporal failed it, it rests a while, so
a Temporal that hangs holds no sweep for long.
"""

from __future__ import annotations

from redis import Redis

from workers.store import keys
from workers.store.records import RunStatus
from workers.store.replies import as_text, reply

CURSOR = keys.temporal_watch_cursor()
RESTING = keys.temporal_watch_resting()


class TemporalWatch:
    """The check's cursor over the waiting runs, and its rest."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    def waiting(self, count: int) -> tuple[int, list[str]]:
        """Where the last pass stopped, and up to `count` waiting run ids from there, oldest first."""
        cursor = reply(self.redis.get(CURSOR))
        start = int(as_text(cursor)) if cursor else 0
        index = keys.status_index(RunStatus.PAUSED.value)
        return start, [as_text(i) for i in reply(self.redis.zrange(index, start, start + count - 1))]

    def move_to(self, position: int) -> None:
        """The next pass starts at `position` (0: from the oldest again)."""
        self.redis.set(CURSOR, position)

    def resting(self) -> bool:
        return bool(reply(self.redis.exists(RESTING)))

    def rest(self, seconds: int) -> None:
        """Skip the check for `seconds`."""
        self.redis.set(RESTING, "1", ex=seconds)
