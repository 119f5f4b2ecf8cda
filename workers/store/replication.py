"""Waiting for replicas: an answer is acked once a replica holds it (`PARLEY_REDIS_MIN_REPLICAS`).

Redis replicates asynchronously. So an answer the master accepted and the bot acked can vanish.
That happens if the master dies before sending it on. With `min_replicas` set, two commands go
down one connection in one pipeline. These are the accepting close and a
`WAIT min_replicas timeout`. `WAIT` counts the replicas holding this connection's writes. So it
must follow the script on the same connection. One round trip keeps the ack short.

When fewer replicas confirm in time, the accept is not undone. A rollback would be one more
unreplicated write, lost the same way. The answer stays accepted on the master, and the person
is asked to submit again. The close script takes the same person's same answers as the same
acceptance. That holds on the master and on a promoted replica alike. See `scripts.CLOSE`, and
`group_scripts.CLOSE_MEMBER` for a group's questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis import Redis
from redis.commands.core import Script
from redis.exceptions import NoScriptError

# The bot's Redis commands time out after 1 s (parley.bootstrap.bot_redis_options) and Slack
# wants the ack within 3 s: half a second is long for a replica on the same network.
WAIT_TIMEOUT_MS = 500


@dataclass(frozen=True)
class Replication:
    """How many replicas must hold an accepted answer before the ack (0: no wait)."""

    min_replicas: int = 0
    timeout_ms: int = WAIT_TIMEOUT_MS

    def closing(
        self, client: Redis, script: Script, keys: Sequence[str], args: Sequence[Any], *, answer: bool
    ) -> tuple[Any, int | None]:
        """Run a question-closing script, and after an answer `WAIT` if replicas are asked.

        Returns the script's reply, and how many replicas confirmed if fewer than `min_replicas`. That
        count is None when it did not wait, or enough confirmed.
        """
        if not (answer and self.min_replicas):
            return script(keys=keys, args=args, client=client), None
        reply, confirmed = self.run_and_wait(client, script, keys, args)
        return reply, confirmed if confirmed < self.min_replicas else None

    def run_and_wait(self, client: Redis, script: Script, keys: Sequence[str], args: Sequence[Any]) -> tuple[Any, int]:
        """Run `script`, then `WAIT` on the same connection.

        Returns its reply and how many replicas confirmed.
        """
        for attempt in (1, 2):
            pipe = client.pipeline(transaction=False)
            pipe.evalsha(script.sha, len(keys), *keys, *args)
            pipe.wait(self.min_replicas, self.timeout_ms)
            reply, confirmed = pipe.execute(raise_on_error=False)
            if isinstance(reply, NoScriptError) and attempt == 1:
                # A new master (after a failover or a restart) has an empty script cache.
                client.script_load(script.script)
                continue
            if isinstance(reply, Exception):
                raise reply
            if isinstance(confirmed, Exception):
                raise confirmed
            return reply, int(confirmed)
        raise AssertionError("unreachable")
