"""The stand-in's OAuth side: installable workspaces, the authorize step, `oauth.v2.access`.

Slack's install is a browser round trip:
1. Parley's `/slack/install` sends the person to Slack's authorize page with a `state`.
2. They approve for their workspace.
3. Slack redirects to Parley's `/slack/oauth_redirect` with a one-time `code` and the `state`.
4. Parley exchanges the code at `oauth.v2.access` for the workspace's bot token. The client id
   and secret go as HTTP Basic auth.

`Installs` plays Slack's part for several simulated workspaces:
- `authorize` approves an install for a team, or a whole Enterprise Grid organisation. An
  org-wide install has `team: null`. It returns the code, as the approval page's redirect would
  carry it.
- `access` answers `oauth.v2.access` in Slack's format.
- `identity` answers `auth.test` for the tokens it issued.
- `uninstall` revokes a workspace's token. Slack then refuses it with `token_revoked`.
The stand-in keeps one message store. Channel ids name one conversation whichever team posts in
it. So two workspaces' channels live side by side.
"""

from __future__ import annotations

import base64
import secrets
import threading
from dataclasses import dataclass
from typing import Any

from bot.playground.slack_error import SlackError

CLIENT_ID = "1111.2222"
CLIENT_SECRET = "playground-client-secret"


@dataclass(frozen=True)
class Team:
    """A simulated workspace, or an organisation, whose `id` is None for org-wide grants."""

    id: str | None
    name: str
    enterprise_id: str | None = None
    enterprise_name: str | None = None


@dataclass
class Grant:
    """One approved install: where, by whom, and its exchanged bot token."""

    team: Team
    user: str
    scopes: str
    bot_user_id: str
    bot_id: str
    token: str = ""
    revoked: bool = False

    @property
    def enterprise_install(self) -> bool:
        return self.team.id is None


class Installs:
    """Install codes and the bot tokens they become, per simulated workspace."""

    def __init__(self, app_id: str, client_id: str = CLIENT_ID, client_secret: str = CLIENT_SECRET) -> None:
        self.app_id = app_id
        self.client_id = client_id
        self.client_secret = client_secret
        self._codes: dict[str, Grant] = {}
        self._tokens: dict[str, Grant] = {}
        self._lock = threading.Lock()

    def authorize(
        self,
        team_id: str | None,
        team_name: str = "",
        *,
        user: str = "U0ALICE",
        enterprise_id: str | None = None,
        enterprise_name: str | None = None,
        scopes: str = "commands,chat:write",
    ) -> str:
        """The person approves the install for `team_id`, returning the code.

        None means org-wide, for `enterprise_id`.
        """
        if team_id is None and not enterprise_id:
            raise ValueError("an org-wide install needs an enterprise id")
        team = Team(team_id, team_name or (team_id or ""), enterprise_id, enterprise_name or enterprise_id)
        suffix = (team_id or enterprise_id or "").upper()
        grant = Grant(team, user, scopes, bot_user_id=f"UB{suffix}", bot_id=f"BB{suffix}")
        code = secrets.token_hex(12)
        with self._lock:
            self._codes[code] = grant
        return code

    def access(self, args: dict[str, Any], authorization: str) -> dict[str, Any]:
        """`oauth.v2.access`: exchange a code once for the workspace's bot token, Slack-style."""
        client_id, client_secret = _basic(authorization) or (args.get("client_id"), args.get("client_secret"))
        if client_id != self.client_id:
            raise SlackError("invalid_client_id")
        if client_secret != self.client_secret:
            raise SlackError("bad_client_secret")
        with self._lock:
            grant = self._codes.pop(str(args.get("code") or ""), None)
            if grant is None:
                raise SlackError("invalid_code")
            grant.token = f"xoxb-{(grant.team.id or grant.team.enterprise_id or '').lower()}-{secrets.token_hex(8)}"
            self._tokens[grant.token] = grant
        team = grant.team
        return {
            "access_token": grant.token,
            "token_type": "bot",
            "scope": grant.scopes,
            "bot_user_id": grant.bot_user_id,
            "app_id": self.app_id,
            "team": None if team.id is None else {"id": team.id, "name": team.name},
            "enterprise": {"id": team.enterprise_id, "name": team.enterprise_name} if team.enterprise_id else None,
            "authed_user": {"id": grant.user},
            "is_enterprise_install": grant.enterprise_install,
        }

    def grant(self, token: str | None) -> Grant | None:
        """The install a token was issued for, if this stand-in issued it."""
        with self._lock:
            return self._tokens.get(token or "")

    def check(self, token: str | None) -> None:
        """Refuse a token of an uninstalled workspace as Slack does."""
        grant = self.grant(token)
        if grant is not None and grant.revoked:
            raise SlackError("token_revoked")

    def identity(self, token: str | None, url: str) -> dict[str, Any] | None:
        """`auth.test` for a token issued here: its workspace and bot.

        None for any other token.
        """
        grant = self.grant(token)
        if grant is None:
            return None
        team = grant.team
        return {
            "url": url,
            "team": team.name,
            "user": "parley",
            "team_id": team.id or team.enterprise_id,
            "user_id": grant.bot_user_id,
            "bot_id": grant.bot_id,
            "enterprise_id": team.enterprise_id,
            "is_enterprise_install": grant.enterprise_install,
        }

    def uninstall(self, team_id: str | None, enterprise_id: str | None = None) -> list[str]:
        """Revoke and return a workspace's tokens, or without a team an org-wide install's."""
        with self._lock:
            gone = [
                g
                for g in self._tokens.values()
                if g.team.id == team_id and (team_id is not None or g.team.enterprise_id == enterprise_id)
            ]
            for g in gone:
                g.revoked = True
        return [g.token for g in gone]


def _basic(authorization: str) -> tuple[str, str] | None:
    """Client id and secret from an HTTP Basic `Authorization` header, as slack_sdk sends them."""
    if not authorization.lower().startswith("basic "):
        return None
    try:
        client_id, _, secret = base64.b64decode(authorization[6:].strip()).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return client_id, secret
