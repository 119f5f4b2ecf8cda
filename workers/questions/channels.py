"""Channels by name, so the question service takes `#name` where a channel id goes.

What the service needs from the host for that lives here.
"""

from __future__ import annotations

from typing import Protocol

FIND_THEM = "the playground's banner and the channel's details in Slack show a channel's id"
"""Where to find a channel's id, when the channels cannot be listed."""
NO_SUCH_CHANNEL = ("channel_not_found", "not_in_channel", "is_archived")
"""Slack's errors for a channel Parley cannot post in: the refusal then names the ones it can."""


class ChannelNames(Protocol):
    """The channels the bot can see in a workspace (`bot.slack.channel_names` reads Slack's)."""

    def find(self, name: str, team: str = "") -> str | None:
        """The id of channel `name` (without `#`), or None."""
        ...

    def postable(self, team: str = "") -> list[tuple[str, str]]:
        """(id, name) of each channel Parley can post in, empty if unlistable."""
        ...


def where_to_post(channels: ChannelNames | None, team: str) -> str:
    """One sentence for a refusal: where Parley can post, or how to find a channel id."""
    listed = channels.postable(team) if channels is not None else []
    if not listed:
        return f"give a channel id (C…) or #name; {FIND_THEM}"
    shown = ", ".join(f"#{name} ({cid})" for cid, name in listed[:20])
    more = f" and {len(listed) - 20} more" if len(listed) > 20 else ""
    return f"the channels Parley can post in: {shown}{more}"
