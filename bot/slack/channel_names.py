"""Channel names to ids for the API and MCP, via `conversations.list`, as Slack apps do.

A caller may write `#deploys` where a channel id goes. Slack's Web API takes only ids. So the
name is looked up among the channels the bot can see: public ones, and private ones it was
invited to. The same listing names where Parley can post, when Slack refuses one.
"""

from __future__ import annotations

from slack_sdk.errors import SlackApiError, SlackClientError

from bot.slack.clients import WebClients
from workers.exceptions import NotInstalled
from workers.logs import Log

log = Log("parley.slack.channels")
PAGE = 200
MOST_PAGES = 50
"""At most 10,000 channels are read for one lookup: a workspace with more is asked by id."""


class SlackChannelNames:
    """`workers.questions.ChannelNames` over Slack's `conversations.list`, per workspace."""

    def __init__(self, clients: WebClients) -> None:
        self.clients = clients

    def _listing(self, team: str) -> list[tuple[str, str, bool]]:
        """(id, name, bot is member) for each channel the bot sees in `team`."""
        web = self.clients.for_workspace(team or None)
        found: list[tuple[str, str, bool]] = []
        cursor = ""
        for _ in range(MOST_PAGES):
            page = web.conversations_list(
                types="public_channel,private_channel", exclude_archived=True, limit=PAGE, cursor=cursor or None
            )
            found += [(c["id"], c["name"], bool(c.get("is_member"))) for c in page.get("channels") or []]
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or ""
            if not cursor:
                break
        return found

    def find(self, name: str, team: str = "") -> str | None:
        """The id of channel `name` (without `#`) in `team`, or None.

        None when the bot sees no such channel, or Slack will not list them.
        """
        wanted = name.lower()
        return next((cid for cid, cname in self.postable(team) if cname.lower() == wanted), None)

    def postable(self, team: str = "") -> list[tuple[str, str]]:
        """(id, name) of the channels Parley can post in.

        Those are the ones it is in, and public ones, which it joins. Empty when Slack will not list
        them. That happens to a token without `channels:read`, like an app installed before Parley asked
        for it.
        """
        try:
            return [(cid, name) for cid, name, _ in self._listing(team)]
        except SlackApiError as exc:
            log.warning("cannot list the channels", team=team, error=str(exc.response.get("error")))
            return []
        except (SlackClientError, NotInstalled, OSError) as exc:  # Slack unreachable, or no such workspace
            log.warning("cannot list the channels", team=team, error=repr(exc))
            return []
