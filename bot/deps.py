"""What the bot's listeners need, built once by the bot's composition root."""

from __future__ import annotations

from dataclasses import dataclass, field

from slack_sdk import WebClient

from bot.slack.host import SlackHost
from workers.runtime.wiring import Runtime


@dataclass
class BotDeps:
    runtime: Runtime
    client: WebClient
    slack: SlackHost
    admins: frozenset[str] = field(default_factory=frozenset)

    def is_admin(self, user: str) -> bool:
        return user in self.admins
