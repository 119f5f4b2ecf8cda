"""The Web API calls connecting Parley to a workspace, each failure worded in one line.

`parley slack setup` checks a bot token with `auth.test`, which names the workspace and the bot.
It checks an app-level token with `apps.connections.open`, which Socket Mode will call. Given an
app configuration token, it can create the app with `apps.manifest.create`. `parley up` checks
the bot token the same way before starting anything. Every call goes to `SLACK_API_URL`. A token
Slack refused (`TokenRefused`) is told apart from an unreachable Slack (`SlackUnreachable`).
Each is one line, and slack_sdk's own log lines about the failure are silenced.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web import SlackResponse

from workers.exceptions import ParleyError
from workers.logs import redacted

TIMEOUT = 15
ERRORS = {
    "invalid_auth": "it does not know this token",
    "not_authed": "no token reached Slack",
    "token_revoked": "this token has been revoked",
    "token_expired": "this token has expired",
    "account_inactive": "this token's app was uninstalled or its account deactivated",
    "not_allowed_token_type": "this is the wrong kind of token for this",
    "missing_scope": "this token lacks the scope it needs",
}


_SDK_LOG = logging.getLogger("parley.slack_api_calls.sdk")
_SDK_LOG.disabled = True
"""The logger handed to slack_sdk: a failed call is reported once, by the error raised here."""


class TokenRefused(ParleyError):
    """Slack, or the token's own shape, refused a token.

    The message says why in one line. `code` is Slack's error (`invalid_auth`). It is empty when the
    token was refused before any call.
    """

    def __init__(self, why: str, code: str = "") -> None:
        self.why, self.code = why, code
        super().__init__(self.about("token"))

    def about(self, token: str) -> str:
        """The refusal, naming the token as `token` ("the bot token xoxb-…0001")."""
        return (
            f"Slack refused the {token} ({self.code}): {self.why}"
            if self.code
            else f"the {token} was refused: {self.why}"
        )


class ManifestRefused(ParleyError):
    """Slack refused the app's manifest (`invalid_manifest`).

    The message names the first problem.
    """


class SlackUnreachable(ParleyError):
    """No answer from Slack at all, which is no verdict on the token.

    Causes are a refused connection, DNS, TLS or a timeout.
    """


@dataclass(frozen=True)
class BotIdentity:
    """Who a bot token speaks as, from `auth.test`."""

    team: str
    team_id: str
    bot: str
    scopes: frozenset[str] | None = None
    """The token's scopes, from the `X-OAuth-Scopes` header Slack sends with each reply; None: not sent."""


@dataclass(frozen=True)
class CreatedApp:
    """An app `apps.manifest.create` made: id, credentials, and its install link."""

    app_id: str
    credentials: dict[str, str]
    install_url: str


def _refusal(exc: SlackApiError) -> TokenRefused | ManifestRefused:
    error = str(exc.response.get("error") or f"HTTP {exc.response.status_code}")
    if error == "invalid_manifest":
        problems = exc.response.get("errors") or [{}]
        first = problems[0] if isinstance(problems[0], dict) else {}
        return ManifestRefused(
            f"Slack refused the manifest: {first.get('pointer', '')} {first.get('message', '')}".rstrip()
        )
    return TokenRefused(ERRORS.get(error, "Slack gave no other reason"), code=error)


class SlackApiCalls:
    """The calls of connecting a workspace, against the Web API at `api_url`."""

    def __init__(self, api_url: str) -> None:
        self.api_url = api_url

    def _call(self, call: Callable[[WebClient], SlackResponse], token: str) -> SlackResponse:
        client = WebClient(token=token, base_url=self.api_url, timeout=TIMEOUT, logger=_SDK_LOG)
        try:
            return call(client)
        except SlackApiError as exc:
            raise _refusal(exc) from None
        except OSError as exc:
            raise SlackUnreachable(f"cannot reach Slack at {redacted(self.api_url)} ({_reason(exc)})") from None

    def bot_identity(self, token: str) -> BotIdentity:
        """Check a bot token with `auth.test`, returning the workspace and bot it names."""
        if not token.startswith("xoxb-"):
            raise TokenRefused("this is not a bot token: a bot token starts with xoxb-")
        found = self._call(lambda c: c.auth_test(), token)
        header = next((str(v) for k, v in (found.headers or {}).items() if k.lower() == "x-oauth-scopes"), None)
        scopes = None if header is None else frozenset(s.strip() for s in header.split(",") if s.strip())
        return BotIdentity(
            team=str(found.get("team", "")), team_id=str(found.get("team_id", "")), bot=found["user"], scopes=scopes
        )

    def check_app_token(self, token: str) -> None:
        """Check an app-level token the way Socket Mode uses it: `apps.connections.open`."""
        if not token.startswith("xapp-"):
            raise TokenRefused("this is not an app-level token: an app-level token starts with xapp-")
        self._call(lambda c: c.apps_connections_open(app_token=token), token)

    def create_app(self, config_token: str, manifest: dict[str, Any]) -> CreatedApp:
        """Create the app from `manifest` with an app configuration token (`xoxe…`)."""
        if not config_token.startswith("xoxe"):
            raise TokenRefused("this is not an app configuration token: one starts with xoxe")
        made = self._call(lambda c: c.apps_manifest_create(manifest=json.dumps(manifest)), config_token)
        credentials = {k: str(v) for k, v in (made.get("credentials") or {}).items()}
        return CreatedApp(app_id=made["app_id"], credentials=credentials, install_url=made["oauth_authorize_url"])


def _reason(exc: OSError) -> str:
    """Why a connection failed, in a few words.

    urllib wraps the socket's error in a `reason`.
    """
    reason = getattr(exc, "reason", None) or exc
    return redacted(getattr(reason, "strerror", None) or str(reason))
