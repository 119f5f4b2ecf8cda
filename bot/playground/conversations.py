"""The stand-in's `conversations.*` methods: joining a public channel, opening a DM, reading a thread.

`conversations.open(users=U…)` opens or finds the bot's DM with one member. It returns its `D…`
id, as Slack does with `im:write`. An unknown user answers `user_not_found`.

`conversations.join` works for public channels only (`channels:join`). A private channel, a DM
or a group DM answers `method_not_supported_for_channel_type`. A channel the bot is already in
succeeds with the warning `already_in_channel`.

`conversations.list` lists the channels the bot can see, a page at a time (`limit`, `cursor`).
That is every public channel, and the private ones it belongs to. Slack does the same for a bot
token.

`conversations.replies` returns a thread's parent and replies, oldest first, a page at a time
(`limit`, `cursor`). Messages carry their `metadata` only when asked with
`include_all_metadata`, as Slack does.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from starlette.requests import Request

from bot.playground.slack_error import SlackError
from bot.playground.workspace import Workspace

LIST_LIMIT = 1000
"""The most channels one `conversations.list` page holds (Slack's limit)."""
REPLIES_LIMIT = 1000
"""The most messages one `conversations.replies` page holds (and its default)."""


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("1", "true")


def _channel_object(ws: Workspace, channel_id: str) -> dict[str, Any]:
    channel = ws.channel(channel_id)
    assert channel is not None
    return {
        "id": channel.id,
        "name": channel.name,
        "is_channel": not channel.is_private,
        "is_group": False,
        "is_im": False,
        "is_mpim": False,
        "is_private": channel.is_private,
        "is_member": channel.bot_is_member,
        "context_team_id": ws.team_id,
    }


def join(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    """Add the bot to a public channel."""
    ref = str(args.get("channel") or "")
    channel = ws.channel(ref)
    if channel is None:
        if ws.resolve_channel(ref) is not None:  # a DM
            raise SlackError("method_not_supported_for_channel_type")
        raise SlackError("channel_not_found")
    if channel.is_private:
        raise SlackError("method_not_supported_for_channel_type")
    if channel.bot_is_member:
        return {"channel": _channel_object(ws, ref), "warning": "already_in_channel"}
    ws.add_channel(dataclasses.replace(channel, bot_is_member=True))
    return {"channel": _channel_object(ws, ref)}


def open_dm(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    """The bot's DM with the one member named in `users`."""
    users = [u for u in str(args.get("users") or "").split(",") if u]
    if not users:
        raise SlackError("users_list_not_supplied")
    if len(users) > 1:
        raise SlackError("not_enough_users")  # a group DM; Parley only ever opens one-person DMs
    if ws.user(users[0]) is None:
        raise SlackError("user_not_found")
    channel = ws.resolve_channel(users[0])
    assert channel is not None
    return {"channel": {"id": channel}, "no_op": False, "already_open": False}


def list_channels(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    """One page of the channels the bot can see, DMs excepted.

    `types` is as Slack takes it.
    """
    types = set(str(args.get("types") or "public_channel").split(","))
    seen = [
        c
        for c in ws.channels()
        if ("private_channel" in types and c.is_private and c.bot_is_member)
        or ("public_channel" in types and not c.is_private)
    ]
    try:
        limit = max(1, min(int(args.get("limit") or 100), LIST_LIMIT))
        start = int(args.get("cursor") or 0)
    except ValueError:
        raise SlackError("invalid_cursor") from None
    page = seen[start : start + limit]
    more = start + limit < len(seen)
    return {
        "channels": [_channel_object(ws, c.id) for c in page],
        "response_metadata": {"next_cursor": str(start + limit) if more else ""},
    }


def usergroup_users(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    """`usergroups.users.list`: the members of a user group."""
    group = ws.usergroup(str(args.get("usergroup") or ""))
    if group is None:
        raise SlackError("no_such_subteam")
    return {"users": list(group.users)}


def replies(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    """One page of the thread whose parent is `ts` in `channel`."""
    channel = ws.resolve_channel(str(args.get("channel") or ""))
    if channel is None:
        raise SlackError("channel_not_found")
    ts = str(args.get("ts") or "")
    thread = ws.thread(channel, ts)
    if not thread:
        raise SlackError("thread_not_found")
    try:
        limit = max(1, min(int(args.get("limit") or REPLIES_LIMIT), REPLIES_LIMIT))
        start = int(args.get("cursor") or 0)
    except ValueError:
        raise SlackError("invalid_cursor") from None
    with_metadata = _truthy(args.get("include_all_metadata"))
    page = thread[start : start + limit]
    if not with_metadata:
        for message in page:
            message.pop("metadata", None)
    more = start + limit < len(thread)
    return {
        "messages": page,
        "has_more": more,
        "response_metadata": {"next_cursor": str(start + limit) if more else ""},
    }
