"""Parley's Slack app manifest in Socket Mode form, and a "create an app" link with it.

`manifest.yml` is written for HTTP mode, with request URLs to point at your host. Socket Mode
needs no public URL. Slack delivers commands, clicks and events over the WebSocket the app-level
token opens. So `parley slack setup` hands Slack `manifest.yml` with every request URL dropped.
It also sets `socket_mode_enabled: true`. Everything else is the file's: name, scopes, the
command, events.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from workers.exceptions import ConfigError

MANIFEST = Path(__file__).resolve().parents[1] / "manifest.yml"
CREATE_APP_URL = "https://api.slack.com/apps?new_app=1&manifest_json="
REQUEST_URL_KEYS = frozenset({"url", "request_url", "message_menu_options_url", "redirect_urls"})
"""Keys holding Parley's public URLs; `redirect_urls` is OAuth mode's, which Socket Mode does not serve."""


def load_manifest(path: Path = MANIFEST) -> dict[str, Any]:
    """`manifest.yml` as a dict.

    A missing or unreadable file is one `ConfigError`.
    """
    try:
        manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read Slack's app manifest {path}: {exc}") from None
    if not isinstance(manifest, dict):
        raise ConfigError(f"{path} holds no app manifest")
    return manifest


def _without_request_urls(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_request_urls(v) for k, v in node.items() if k not in REQUEST_URL_KEYS}
    if isinstance(node, list):
        return [_without_request_urls(v) for v in node]
    return copy.deepcopy(node)


def socket_mode_manifest(manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest, by default `manifest.yml`'s, without request URLs and with Socket Mode."""
    socket = _without_request_urls(load_manifest() if manifest is None else manifest)
    socket.setdefault("settings", {})["socket_mode_enabled"] = True
    return socket


def create_app_link(manifest: dict[str, Any]) -> str:
    """Slack's "create an app" page with `manifest` filled in.

    The manifest goes as compact URL-encoded JSON.
    """
    return CREATE_APP_URL + quote(json.dumps(manifest, separators=(",", ":")), safe="")
