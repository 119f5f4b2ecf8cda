"""The fields listeners read out of an interaction payload, wherever Slack puts them.

`bot.slack.payload_shape` has already refused bodies whose objects have the wrong type. So these
only choose between the places a field may be. A click's channel in a message is `channel.id`,
while a Home tab has none. They give a default where the field is absent.
"""

from __future__ import annotations

from typing import Any

from workers.runs import Where


def clicked(body: dict[str, Any]) -> dict[str, Any]:
    """The action a `block_actions` payload reports (Slack sends one per click)."""
    return (body.get("actions") or [{}])[0]


def team_of(body: dict[str, Any]) -> str:
    """The payload's workspace, or "" when Slack sent `"team": null` (org-wide installs)."""
    return str((body.get("team") or {}).get("id") or "")


def enterprise_of(body: dict[str, Any]) -> str | None:
    """The Enterprise Grid organization of the payload, where there is one."""
    enterprise = (body.get("enterprise") or {}).get("id") or (body.get("team") or {}).get("enterprise_id")
    return str(enterprise) if enterprise else None


def channel_of(body: dict[str, Any]) -> str | None:
    """The channel the click happened in; None on a Home tab or in a modal."""
    return (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")


def message_of(body: dict[str, Any]) -> str | None:
    """The `ts` of the message clicked in; None on a Home tab or in a modal."""
    return (body.get("container") or {}).get("message_ts") or (body.get("message") or {}).get("ts")


def where_of(body: dict[str, Any]) -> Where:
    """Where a click came from: workspace, organisation, channel and message."""
    return Where(
        team=team_of(body), enterprise=enterprise_of(body), channel=channel_of(body), message_ts=message_of(body)
    )


def thread_of(body: dict[str, Any]) -> str | None:
    """The thread of the clicked message, so a reply to the clicker lands beside it."""
    return (body.get("container") or {}).get("thread_ts")
