"""Which `WebClient` talks to a run's workspace: the one bot token, or its installation's.

Single-workspace mode (`SLACK_BOT_TOKEN`) has one client for everything. In OAuth mode each
workspace has its own bot token. The install saved it in the installation store. A run's
conversation names its team, and for an org-wide install its enterprise. Its client carries that
installation's token. Clients are cached by token. So a reinstall, with a new token, gets a new
client. An uninstall is seen at the next lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from slack_sdk import WebClient
from slack_sdk.oauth.installation_store import InstallationStore

from bot.slack.client import make_web_client
from workers.exceptions import NotInstalled


class WebClients:
    """A `WebClient` per workspace: `single` for all, or one per installation.

    Installations are found in `installations`.
    """

    def __init__(
        self,
        *,
        single: WebClient | None = None,
        installations: InstallationStore | None = None,
        base_url: str = "",
    ) -> None:
        if (single is None) == (installations is None):
            raise ValueError("give either one client or an installation store")
        self.single = single
        self.installations = installations
        self.base_url = base_url
        self._by_token: dict[str, WebClient] = {}
        self._lock = threading.Lock()

    @property
    def many(self) -> bool:
        """True in OAuth mode: each workspace has its own installation."""
        return self.installations is not None

    def for_workspace(
        self, team: str | None, enterprise: str | None = None, *, enterprise_install: bool = False
    ) -> WebClient:
        """The client bearing the bot token of the installation serving `team` or `enterprise`."""
        if self.single is not None:
            return self.single
        assert self.installations is not None
        bot = self.installations.find_bot(
            enterprise_id=enterprise or None, team_id=team or None, is_enterprise_install=enterprise_install
        )
        if bot is None and enterprise and not enterprise_install:
            # A team of an organisation where Parley was installed org-wide.
            bot = self.installations.find_bot(enterprise_id=enterprise, team_id=None, is_enterprise_install=True)
        if bot is None or not bot.bot_token:
            raise NotInstalled(team, enterprise)
        with self._lock:
            client = self._by_token.get(bot.bot_token)
            if client is None:
                client = self._by_token[bot.bot_token] = make_web_client(bot.bot_token, self.base_url)
        return client

    def for_conversation(self, conversation: Mapping[str, Any]) -> WebClient:
        """The client for the workspace a run's conversation is in."""
        return self.for_workspace(
            conversation.get("team"),
            conversation.get("enterprise"),
            enterprise_install=bool(conversation.get("enterprise_install")),
        )
