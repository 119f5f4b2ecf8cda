"""Composition of the two Slack modes: one bot token, or OAuth installs in many workspaces.

Single-workspace mode (`SLACK_BOT_TOKEN`) uses one `WebClient` for everything. OAuth mode needs
`SLACK_CLIENT_ID`, `SLACK_CLIENT_SECRET` and `SLACK_STATE_SECRET`. There bolt's own OAuth flow
serves `/slack/install` and `/slack/oauth_redirect`. It saves each workspace's installation in
Redis (`workers.store.installations`). It authorizes every request with its workspace's bot
token. Workers post with the token of the installation that owns the run.
"""

from __future__ import annotations

import redis
from slack_bolt.oauth.oauth_settings import OAuthSettings

from bot.slack.client import make_web_client
from bot.slack.clients import WebClients
from parley.settings import Settings
from parley.slack_manifest import load_manifest
from workers.store.installations import RedisInstallationStore, RedisOAuthStateStore

INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"


def bot_scopes() -> list[str]:
    """The bot scopes an install asks for: `manifest.yml`'s, so they never differ."""
    return list(load_manifest()["oauth_config"]["scopes"]["bot"])


def web_clients(settings: Settings, client: redis.Redis) -> WebClients:
    """This process's Web API clients: per installation in OAuth mode, else one.

    The one client uses the bot token.
    """
    if settings.oauth_mode:
        return WebClients(installations=RedisInstallationStore(client), base_url=settings.slack_api_url)
    return WebClients(single=make_web_client(settings.slack_bot_token, settings.slack_api_url))


def oauth_settings(settings: Settings, clients: WebClients, client: redis.Redis) -> OAuthSettings | None:
    """bolt's OAuth settings on the Redis stores, or None in single-workspace mode."""
    if not settings.oauth_mode:
        return None
    assert settings.slack_client_id and settings.slack_client_secret and settings.slack_state_secret
    return OAuthSettings(
        client_id=settings.slack_client_id,
        client_secret=settings.slack_client_secret,
        scopes=bot_scopes(),
        installation_store=clients.installations,
        installation_store_bot_only=True,
        state_store=RedisOAuthStateStore(client, settings.slack_state_secret),
        install_path=INSTALL_PATH,
        redirect_uri_path=REDIRECT_PATH,
    )
