"""The stand-in's app-level side: token rights, Socket Mode URLs, apps made from a manifest.

Slack has three kinds of token, each for its own methods:
- bot tokens (`xoxb-`) for the ordinary methods
- app-level tokens (`xapp-`) for `apps.connections.open`
- app configuration tokens (`xoxe.xoxp-…`) for `apps.manifest.*`
`auth.test` takes any. A token of the wrong kind is refused with `not_allowed_token_type`. An
unknown one is refused with `invalid_auth`. `Workspace.accepted_tokens` says which tokens are
known, by default any of a known kind. So `parley slack setup` can be shown a wrong token and a
right one.

`apps.manifest.create` checks the manifest's basic shape the way Slack answers it. That is
`invalid_manifest`, with `errors: [{message, pointer}]`. It returns a new app id, its
credentials and the install link. It records the app in the workspace.
"""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from bot.playground.slack_error import SlackError
from bot.playground.workspace import Workspace

TOKEN_KINDS = (("xoxb-", "bot"), ("xapp-", "app"), ("xoxe", "config"))
METHOD_KINDS = {"apps.connections.open": "app", "apps.manifest.create": "config"}
NAME_LIMIT = 35


def token_kind(token: str) -> str | None:
    """`bot`, `app` or `config` by the token's prefix, else None."""
    return next((kind for prefix, kind in TOKEN_KINDS if token.startswith(prefix)), None)


CLIENT_AUTH_METHODS = frozenset({"oauth.v2.access"})
"""Methods authenticated by the app's client id and secret, not a token."""


def check_token(ws: Workspace, method: str, token: str | None) -> None:
    """Refuse a call the way Slack does.

    Refused are a missing token, an unknown one, or one of the wrong kind for `method`. So is a
    revoked one, when the workspace uninstalled the app.
    """
    if not token:
        raise SlackError("not_authed")
    ws.installs.check(token)
    installed = ws.installs.grant(token) is not None
    kind = token_kind(token)
    if kind is None or (ws.accepted_tokens is not None and token not in ws.accepted_tokens and not installed):
        raise SlackError("invalid_auth")
    if method != "auth.test" and kind != METHOD_KINDS.get(method, "bot"):
        raise SlackError("not_allowed_token_type")


def connections_open(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    """A Socket Mode URL: the configured loopback server's, or one on the stand-in's host."""
    return {"url": ws.socket_mode_url or f"ws://{request.url.netloc}/socket-mode/link"}


def _at(doc: Any, *path: str) -> Any:
    for key in path:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def manifest_problems(manifest: Any) -> list[dict[str, str]]:
    """What Slack would refuse in `manifest`'s basic shape, as `{message, pointer}`.

    Empty when it is whole.
    """
    if not isinstance(manifest, dict):
        return [{"message": "must be an object", "pointer": "/"}]
    problems: list[dict[str, str]] = []

    def refuse(pointer: str, message: str) -> None:
        problems.append({"message": message, "pointer": pointer})

    name = _at(manifest, "display_information", "name")
    if not isinstance(name, str) or not 1 <= len(name) <= NAME_LIMIT:
        refuse("/display_information/name", f"must be a string of 1 to {NAME_LIMIT} characters")
    bot_user = _at(manifest, "features", "bot_user")
    if bot_user is not None and not _at(bot_user, "display_name"):
        refuse("/features/bot_user/display_name", "is required")
    scopes = _at(manifest, "oauth_config", "scopes", "bot")
    if scopes is not None and not (isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)):
        refuse("/oauth_config/scopes/bot", "must be an array of strings")
    socket_mode = _at(manifest, "settings", "socket_mode_enabled")
    if socket_mode is not None and not isinstance(socket_mode, bool):
        refuse("/settings/socket_mode_enabled", "must be a boolean")
    for i, command in enumerate(_at(manifest, "features", "slash_commands") or []):
        if not str(_at(command, "command") or "").startswith("/") or not _at(command, "description"):
            refuse(f"/features/slash_commands/{i}", "needs a command starting with / and a description")
        elif not socket_mode and not _at(command, "url"):
            refuse(f"/features/slash_commands/{i}/url", "is required unless Socket Mode is enabled")
    events = _at(manifest, "settings", "event_subscriptions")
    if events and not socket_mode and not _at(events, "request_url"):
        refuse("/settings/event_subscriptions/request_url", "is required unless Socket Mode is enabled")
    interactivity = _at(manifest, "settings", "interactivity")
    if _at(interactivity, "is_enabled") and not socket_mode and not _at(interactivity, "request_url"):
        refuse("/settings/interactivity/request_url", "is required unless Socket Mode is enabled")
    return problems


def manifest_create(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    """Make an app from JSON `manifest`: its id, credentials and install link, as Slack does."""
    manifest = args.get("manifest")
    if isinstance(manifest, str):
        try:
            manifest = json.loads(manifest)
        except json.JSONDecodeError:
            raise SlackError("invalid_manifest", errors=[{"message": "is not JSON", "pointer": "/"}]) from None
    problems = manifest_problems(manifest)
    if problems:
        raise SlackError("invalid_manifest", errors=problems)
    app_id = "A0" + secrets.token_hex(5).upper()
    credentials = {
        "client_id": f"{secrets.randbelow(10**12)}.{secrets.randbelow(10**13)}",
        "client_secret": secrets.token_hex(16),
        "verification_token": secrets.token_urlsafe(18),
        "signing_secret": secrets.token_hex(16),
    }
    assert isinstance(manifest, dict)  # manifest_problems refused anything else
    ws.add_app(app_id, manifest, credentials)
    scopes = ",".join(_at(manifest, "oauth_config", "scopes", "bot") or [])
    query = urlencode({"client_id": credentials["client_id"], "scope": scopes})
    install = f"{request.url.scheme}://{request.url.netloc}/oauth/v2/authorize?{query}"
    return {"app_id": app_id, "credentials": credentials, "oauth_authorize_url": install}
