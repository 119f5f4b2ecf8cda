"""The "create an app" link `parley slack setup` prints: Slack's page with Parley's Socket Mode manifest.

The link decodes to a manifest that passes Slack's schema, is `manifest.yml` in Socket Mode
form (no request URL, Socket Mode on) and otherwise the same app.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from manifest_schema import schema_errors

from parley.slack_manifest import MANIFEST, create_app_link, socket_mode_manifest

pytestmark = pytest.mark.unit


def decoded(link: str) -> dict[str, Any]:
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "api.slack.com", "/apps")
    query = parse_qs(parts.query, strict_parsing=True)
    assert query["new_app"] == ["1"] and set(query) == {"new_app", "manifest_json"}
    return json.loads(query["manifest_json"][0])


def urls_in(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [u for v in node.values() for u in urls_in(v)]
    if isinstance(node, list):
        return [u for v in node for u in urls_in(v)]
    return [node] if isinstance(node, str) and "://" in node else []


def test_the_link_decodes_to_a_manifest_that_passes_slacks_schema() -> None:
    link = create_app_link(socket_mode_manifest())
    assert link.startswith("https://api.slack.com/apps?new_app=1&manifest_json=%7B")
    manifest = decoded(link)
    errors = schema_errors(manifest)
    assert not errors, "\n".join(errors)
    assert manifest == socket_mode_manifest()


def test_the_socket_mode_form_has_no_request_url_and_is_otherwise_manifest_yml() -> None:
    http = yaml.safe_load(MANIFEST.read_text())
    socket = socket_mode_manifest()
    assert urls_in(http) and urls_in(socket) == []
    assert socket["settings"]["socket_mode_enabled"] is True
    assert http["settings"]["socket_mode_enabled"] is False
    assert socket["oauth_config"] == {k: v for k, v in http["oauth_config"].items() if k != "redirect_urls"}
    assert socket["display_information"] == http["display_information"]
    [command] = socket["features"]["slash_commands"]
    assert command == {k: v for k, v in http["features"]["slash_commands"][0].items() if k != "url"}
    events = http["settings"]["event_subscriptions"]["bot_events"]
    assert socket["settings"]["event_subscriptions"] == {"bot_events": events}
    assert socket["settings"]["interactivity"] == {"is_enabled": True}


def test_the_schema_check_can_fail() -> None:
    broken = socket_mode_manifest()
    broken["features"]["slash_commands"][0]["command"] = "parley"  # no leading slash
    assert schema_errors(broken)
