"""Who and where in the playground workspace: its fixed ids, members and channels."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass
from typing import Any

TEAM_ID = "T0PARLEY"
TEAM_NAME = "Parley Playground"
TEAM_DOMAIN = "parley-playground"
BOT_USER_ID = "U0PARLEYBOT"
BOT_ID = "B0PARLEYBOT"
APP_ID = "A0PARLEY"


@dataclass(frozen=True)
class User:
    """A workspace member, rendered in the shape of ``users.info``."""

    id: str
    name: str
    real_name: str = ""
    is_admin: bool = False
    is_bot: bool = False
    tz: str = "Etc/UTC"  # the IANA zone of the member's profile

    def to_slack(self, team_id: str) -> dict[str, Any]:
        """Return the user object Slack sends from ``users.info``."""
        real = self.real_name or self.name.title()
        offset = dt.datetime.now(zoneinfo.ZoneInfo(self.tz)).utcoffset() or dt.timedelta()
        profile = {"real_name": real, "display_name": self.name, "team": team_id}
        flags = dict.fromkeys(("deleted", "is_primary_owner", "is_restricted", "is_ultra_restricted"), False)
        return {
            **dict(id=self.id, team_id=team_id, name=self.name, real_name=real, profile=profile, **flags),
            **dict(tz=self.tz, tz_label=self.tz, tz_offset=int(offset.total_seconds()), updated=0),
            **dict(is_admin=self.is_admin, is_owner=self.is_admin, is_bot=self.is_bot, is_app_user=False),
        }


@dataclass(frozen=True)
class Channel:
    """A channel, public unless `is_private`.

    The bot posts and hears replies only where it is a member.
    """

    id: str
    name: str
    is_private: bool = False
    bot_is_member: bool = True


@dataclass(frozen=True)
class UserGroup:
    """A user group (`S…`): mentioned as `<!subteam^S…>`, its members listed by `usergroups.users.list`."""

    id: str
    handle: str
    users: tuple[str, ...] = ()
