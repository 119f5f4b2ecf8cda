"""The stand-in's app-level methods, over real HTTP with slack_sdk: which tokens it knows, Socket Mode URLs,
and apps created from a manifest, answered in Slack's wire format.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.playground import LoopbackServer, Workspace, make_webapi_app
from parley.slack_manifest import MANIFEST, socket_mode_manifest

pytestmark = pytest.mark.integration

BOT, APP, CONFIG = "xoxb-known", "xapp-known", "xoxe.xoxp-1-known"


@pytest.fixture
def ws() -> Workspace:
    ws = Workspace()
    ws.accepted_tokens = {BOT, APP, CONFIG}
    ws.socket_mode_url = "ws://127.0.0.1:9/link/?ticket=t"
    return ws


@pytest.fixture
def api(ws: Workspace) -> Iterator[str]:
    with LoopbackServer(make_webapi_app(ws)) as server:
        yield server.url + "/api/"


def client(api: str, token: str) -> WebClient:
    return WebClient(token=token, base_url=api, timeout=5)


def error_of(call) -> str:
    with pytest.raises(SlackApiError) as info:
        call()
    assert info.value.response.status_code == 200
    return str(info.value.response["error"])


def test_auth_test_refuses_a_token_the_workspace_does_not_know(api: str, ws: Workspace) -> None:
    assert client(api, BOT).auth_test()["team"] == ws.team_name
    assert error_of(client(api, "xoxb-unknown").auth_test) == "invalid_auth"
    ws.accepted_tokens = None  # the playground's default: any bot token
    assert client(api, "xoxb-unknown").auth_test()["user"] == "parley"


def test_connections_open_gives_the_configured_url_to_a_known_app_token_only(api: str) -> None:
    assert client(api, APP).apps_connections_open(app_token=APP)["url"] == "ws://127.0.0.1:9/link/?ticket=t"
    assert error_of(lambda: client(api, APP).apps_connections_open(app_token="xapp-unknown")) == "invalid_auth"
    assert error_of(lambda: client(api, BOT).apps_connections_open(app_token=BOT)) == "not_allowed_token_type"


def test_manifest_create_returns_an_app_with_its_credentials_and_install_link(api: str, ws: Workspace) -> None:
    manifest = socket_mode_manifest()
    made = client(api, CONFIG).apps_manifest_create(manifest=json.dumps(manifest))
    credentials = made["credentials"]
    assert set(credentials) == {"client_id", "client_secret", "verification_token", "signing_secret"}
    assert all(isinstance(v, str) and len(v) >= 16 for v in credentials.values())
    install = urlsplit(made["oauth_authorize_url"])
    assert install.path == "/oauth/v2/authorize"  # as slack.com/oauth/v2/authorize
    query = parse_qs(install.query)
    assert query["client_id"] == [credentials["client_id"]]
    assert query["scope"] == [",".join(manifest["oauth_config"]["scopes"]["bot"])]
    assert ws.apps() == {made["app_id"]: {"manifest": manifest, "credentials": credentials}}
    again = client(api, CONFIG).apps_manifest_create(manifest=json.dumps(manifest))
    assert again["app_id"] != made["app_id"] and again["credentials"] != credentials


def test_manifest_create_needs_a_configuration_token(api: str, ws: Workspace) -> None:
    manifest = json.dumps(socket_mode_manifest())
    assert error_of(lambda: client(api, BOT).apps_manifest_create(manifest=manifest)) == "not_allowed_token_type"
    assert error_of(lambda: client(api, "xoxe.xoxp-1-other").apps_manifest_create(manifest=manifest)) == (
        "invalid_auth"
    )
    assert ws.apps() == {}


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        (lambda m: m["display_information"].pop("name"), "/display_information/name"),
        (lambda m: m["display_information"].update(name="P" * 36), "/display_information/name"),
        (lambda m: m["settings"].update(socket_mode_enabled=False), "/features/slash_commands/0/url"),
        (lambda m: m["features"]["bot_user"].pop("display_name"), "/features/bot_user/display_name"),
    ],
    ids=["no name", "long name", "http without urls", "bot without name"],
)
def test_manifest_create_refuses_a_manifest_slack_would(api: str, ws: Workspace, change, pointer: str) -> None:
    manifest = socket_mode_manifest()
    change(manifest)
    with pytest.raises(SlackApiError) as info:
        client(api, CONFIG).apps_manifest_create(manifest=json.dumps(manifest))
    assert info.value.response["error"] == "invalid_manifest"
    assert pointer in [e["pointer"] for e in info.value.response["errors"]]
    assert ws.apps() == {}


def test_the_http_manifest_with_its_urls_is_accepted_as_it_is(api: str) -> None:
    http = yaml.safe_load(MANIFEST.read_text())
    assert client(api, CONFIG).apps_manifest_create(manifest=json.dumps(http))["app_id"].startswith("A")
