"""What the bot's listeners need, built once by the bot's composition root."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from slack_sdk import WebClient

from bot.slack.host import SlackHost
from workers.logs import Log
from workers.runtime.wiring import Runtime

log = Log("parley.bot")


def _after_ack_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=8, thread_name_prefix="parley-after-ack")


@dataclass
class BotDeps:
    runtime: Runtime
    client: WebClient
    slack: SlackHost
    admins: frozenset[str] = field(default_factory=frozenset)
    pool: ThreadPoolExecutor = field(default_factory=_after_ack_pool)

    def is_admin(self, user: str) -> bool:
        return user in self.admins

    def after_ack(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a Web API call off the answer path, without holding up the ack.

        Why not a bolt lazy listener here: bolt builds a lazy listener's request by
        re-parsing the whole form body, on every click, before it responds; profiled,
        that was a fifth of the Submit path's CPU. Only refusals need a call after the
        ack (an accepted answer is shown by the worker), so they go to this pool.
        """

        def call() -> None:
            try:
                fn(*args)
            except Exception:
                log.error("call after the ack failed", exc=True)

        self.pool.submit(call)
