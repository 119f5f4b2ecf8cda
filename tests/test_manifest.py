"""manifest.yml is a valid Slack app manifest that asks for exactly the scopes Parley uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from manifest_schema import schema_errors

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "manifest.yml"
EXPECTED_SCOPES = {
    "commands",
    "chat:write",
    "channels:join",
    "channels:history",
    "groups:history",
    "channels:read",
    "groups:read",
    "im:history",
    "mpim:history",
    "usergroups:read",
    "users:read",
    "im:write",
    "assistant:write",
}
EXPECTED_EVENTS = {
    "app_home_opened",
    "message.channels",
    "message.groups",
    "message.im",
    "message.mpim",
    "app_uninstalled",
    "agent_session_stopped",
    "tokens_revoked",
}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return yaml.safe_load(MANIFEST.read_text())


def test_manifest_validates_against_slacks_schema(manifest: dict[str, Any]) -> None:
    errors = schema_errors(manifest)
    assert not errors, "\n".join(errors)


def test_bot_scopes_are_exactly_what_parley_needs(manifest: dict[str, Any]) -> None:
    scopes = manifest["oauth_config"]["scopes"]["bot"]
    assert len(scopes) == len(set(scopes))
    assert set(scopes) == EXPECTED_SCOPES
    assert "user" not in manifest["oauth_config"]["scopes"]


def test_every_url_points_at_the_bolt_endpoint(manifest: dict[str, Any]) -> None:
    settings = manifest["settings"]
    urls = [
        *(c["url"] for c in manifest["features"]["slash_commands"]),
        settings["event_subscriptions"]["request_url"],
        settings["interactivity"]["request_url"],
        settings["interactivity"]["message_menu_options_url"],
    ]
    assert len(urls) == 4
    for url in urls:
        assert url.startswith("https://") and url.endswith("/slack/events"), url


def test_features_and_settings(manifest: dict[str, Any]) -> None:
    assert manifest["_metadata"] == {"major_version": 1, "minor_version": 1}
    assert manifest["display_information"]["name"] == "Parley"
    features = manifest["features"]
    assert features["bot_user"] == {"display_name": "parley", "always_online": True}
    assert features["app_home"]["home_tab_enabled"] is True
    assert features["app_home"]["messages_tab_enabled"] is True
    assert features["app_home"]["messages_tab_read_only_enabled"] is False
    [command] = features["slash_commands"]
    assert command["command"] == "/parley"
    assert command["usage_hint"] == "AGENT text | help | runs"
    settings = manifest["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == EXPECTED_EVENTS
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is False
    assert settings["org_deploy_enabled"] is False
    assert settings["token_rotation_enabled"] is False


def test_oauth_settings_redirect_back_to_parley_and_install_the_manifests_scopes(manifest: dict[str, Any]) -> None:
    """OAuth mode: Slack's redirect URL is the one bolt serves, and an install asks for the manifest's scopes."""
    from parley.installs import INSTALL_PATH, REDIRECT_PATH, bot_scopes

    [redirect] = manifest["oauth_config"]["redirect_urls"]
    assert redirect.startswith("https://") and redirect.endswith(REDIRECT_PATH)
    assert INSTALL_PATH == "/slack/install"
    assert bot_scopes() == manifest["oauth_config"]["scopes"]["bot"]
    assert set(bot_scopes()) == EXPECTED_SCOPES
    broken = {
        **manifest,
        "oauth_config": {**manifest["oauth_config"], "redirect_urls": "https://x/slack/oauth_redirect"},
    }
    assert schema_errors(broken), "a redirect URL that is not a list must fail Slack's schema"
