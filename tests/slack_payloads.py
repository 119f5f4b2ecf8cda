"""Slack's wire formats, built as Slack builds them: signatures, bodies and payloads.

The builders follow Slack's documented formats, not Parley's code:

- slash commands are `application/x-www-form-urlencoded` bodies with Slack's fields;
- interactions (`block_actions`, `view_submission`, `block_suggestion`) are form bodies with a
  single `payload=<JSON>` field;
- Events API deliveries are `event_callback` JSON envelopes;
- every HTTP request is signed like Slack signs it, by slack_sdk's `SignatureVerifier`:
  the signature in `X-Slack-Signature`, the timestamp in `X-Slack-Request-Timestamp`.

The constants name the test workspace: its people, channels, admin and secrets, shared by the
stack that runs Parley (`slack_stack`) and the tests that talk to it.
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

from bot.playground.workspace import APP_ID, BOT_USER_ID, TEAM_ID

SIGNING_SECRET = "parley-tests-signing-secret"
BOT_TOKEN = "xoxb-test"
APP_TOKEN = "xapp-test"
VERIFICATION_TOKEN = "deprecatedVerificationToken"  # Slack still sends the legacy `token` field
TEAM_DOMAIN = "parley-playground"
EVENTS_PATH = "/slack/events"
ADMIN = "U0ALICE"
PERMALINK_BASE = f"https://{TEAM_DOMAIN}.slack.com"
FORM = "application/x-www-form-urlencoded"
JSON_TYPE = "application/json"

USER_NAMES = {"U0ALICE": "alice", "U0BOB": "bob", "U0CAROL": "carol"}
CHANNEL_NAMES = {
    "C0GENERAL": "general",
    "C0OPS": "ops",
    "C0RANDOM": "random",
    "C0SECRET": "privategroup",  # Slack's channel_name for a private channel
    "D0BOB": "directmessage",
    "D0HUMANS": "directmessage",
    "G0GROUPDM": "mpdm-alice--bob--carol-1",
}


# ---- signing ---------------------------------------------------------------------------
def slack_signature(body: str, timestamp: str, secret: str = SIGNING_SECRET) -> str:
    """`v0=<hex>` over `timestamp` and the raw body, made by slack_sdk's own signer."""
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None, "slack_sdk signs whenever a timestamp is given"
    return signature


def signed_headers(
    body: str, content_type: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": slack_signature(body, ts, secret),
    }


# ---- small Slack-shaped values -----------------------------------------------------------
def trigger_id() -> str:
    """A trigger id in Slack's shape (`<digits>.<digits>.<hex>`)."""
    return f"{secrets.randbelow(10**11)}.{secrets.randbelow(10**12)}.{secrets.token_hex(16)}"


def action_ts() -> str:
    return f"{time.time():.6f}"


def response_url(team: str = TEAM_ID) -> str:
    return f"https://hooks.slack.com/actions/{team}/{secrets.randbelow(10**12)}/{secrets.token_urlsafe(18)}"


def event_id() -> str:
    return "Ev" + secrets.token_hex(5).upper()


def mrkdwn_escape(text: str) -> str:
    """Slack's escaping for text in mrkdwn: `&`, `<` and `>` as entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _user(user: str, team: str) -> dict[str, Any]:
    name = USER_NAMES.get(user, user.lower())
    return {"id": user, "username": name, "name": name, "team_id": team}


def _team(team: str) -> dict[str, Any]:
    return {"id": team, "domain": TEAM_DOMAIN}


def _channel(channel: str) -> dict[str, Any]:
    return {"id": channel, "name": CHANNEL_NAMES.get(channel, channel.lower())}


# ---- slash commands ----------------------------------------------------------------------
def slash_command_body(text: str, **fields: Any) -> str:
    """The form body Slack POSTs for `/command text` (`fields`: as for `slash_command_fields`)."""
    return urlencode(slash_command_fields(text, **fields))


def slash_command_fields(
    text: str,
    *,
    user: str,
    channel: str = "C0GENERAL",
    team: str = TEAM_ID,
    command: str = "/parley",
    trigger: str | None = None,
) -> dict[str, str]:
    """A slash command's fields: form-encoded over HTTP, the envelope's `payload` over Socket Mode."""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team,
        "team_domain": TEAM_DOMAIN,
        "channel_id": channel,
        "channel_name": CHANNEL_NAMES.get(channel, channel.lower()),
        "user_id": user,
        "user_name": USER_NAMES.get(user, user.lower()),
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": f"https://hooks.slack.com/commands/{team}/{secrets.randbelow(10**12)}/{secrets.token_hex(12)}",
        "trigger_id": trigger or trigger_id(),
    }


# ---- interactions --------------------------------------------------------------------------
def interaction_body(payload: dict[str, Any]) -> str:
    """An interaction as Slack sends it over HTTP: one form field, `payload`, holding JSON."""
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))})


def _message_container(message: dict[str, Any], channel: str) -> dict[str, Any]:
    """The `container` of a request from an element in a channel message (and its thread)."""
    container = {"type": "message", "message_ts": message["ts"], "channel_id": channel, "is_ephemeral": False}
    if message.get("thread_ts"):
        container["thread_ts"] = message["thread_ts"]
    return container


def _block_actions(user: str, team: str, container: dict[str, Any], trigger: str | None) -> dict[str, Any]:
    """The fields every `block_actions` payload carries, wherever the click happened."""
    return {
        "type": "block_actions",
        "user": _user(user, team),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": container,
        "trigger_id": trigger or trigger_id(),
        "team": _team(team),
        "enterprise": None,
        "is_enterprise_install": False,
    }


def block_actions_payload(
    *,
    user: str,
    message: dict[str, Any],
    channel: str,
    action: dict[str, Any],
    state_values: dict[str, Any] | None = None,
    team: str = TEAM_ID,
    trigger: str | None = None,
) -> dict[str, Any]:
    """A `block_actions` payload for a click in `message` (as stored by Slack) in `channel`."""
    return {
        **_block_actions(user, team, _message_container(message, channel), trigger),
        "channel": _channel(channel),
        "message": message,
        "state": {"values": state_values or {}},
        "response_url": response_url(team),
        "actions": [action],
    }


def home_actions_payload(
    *, user: str, view: dict[str, Any], action: dict[str, Any], team: str = TEAM_ID, trigger: str | None = None
) -> dict[str, Any]:
    """A `block_actions` payload for a click on the App Home tab (`container.type == "view"`)."""
    return {
        **_block_actions(user, team, {"type": "view", "view_id": view["id"]}, trigger),
        "view": view,
        "actions": [action],
    }


def view_submission_payload(
    *, user: str, view: dict[str, Any], state_values: dict[str, Any], team: str = TEAM_ID
) -> dict[str, Any]:
    """A `view_submission` for the open modal `view` (as Slack stored it) with `state_values`."""
    submitted = {**view, "state": {"values": state_values}}
    return {
        "type": "view_submission",
        "team": _team(team),
        "user": _user(user, team),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "trigger_id": trigger_id(),
        "view": submitted,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


def block_suggestion_payload(
    *,
    user: str,
    message: dict[str, Any],
    channel: str,
    block_id: str,
    action_id: str,
    value: str,
    team: str = TEAM_ID,
) -> dict[str, Any]:
    """The options request Slack sends while a person types into an `external_select` in a message."""
    return {
        "type": "block_suggestion",
        "user": _user(user, team),
        "container": _message_container(message, channel),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "action_id": action_id,
        "block_id": block_id,
        "value": value,
        "team": _team(team),
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": _channel(channel),
        "message": message,
        "state": {"values": {}},
    }


def view_suggestion_payload(
    *, user: str, view: dict[str, Any], block_id: str, action_id: str, value: str, team: str = TEAM_ID
) -> dict[str, Any]:
    """The options request Slack sends while a person types into an `external_select` in an open modal."""
    return {
        "type": "block_suggestion",
        "user": _user(user, team),
        "container": {"type": "view", "view_id": view["id"]},
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "action_id": action_id,
        "block_id": block_id,
        "value": value,
        "team": _team(team),
        "enterprise": None,
        "is_enterprise_install": False,
        "view": view,
    }


# ---- events ------------------------------------------------------------------------------
def event_callback_body(
    event: dict[str, Any],
    *,
    team: str = TEAM_ID,
    eid: str | None = None,
    installed_team: str | None = None,
    shared: bool = False,
) -> str:
    """The Events API envelope Slack POSTs as JSON.

    In a shared (Slack Connect) channel the envelope's `team_id` is the team the event came
    from, `installed_team` the one the app is installed in (in `authorizations`), and
    `is_ext_shared_channel` is true.
    """
    installed = installed_team or team
    envelope = {
        "token": VERIFICATION_TOKEN,
        "team_id": team,
        "context_team_id": team,
        "context_enterprise_id": None,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": eid or event_id(),
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": installed,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": shared,
        "event_context": "4-" + secrets.token_urlsafe(24),
    }
    return json.dumps(envelope, separators=(",", ":"))


def _rich_text(text: str) -> list[dict[str, Any]]:
    """The `blocks` Slack adds to a message a person typed."""
    return [
        {
            "type": "rich_text",
            "block_id": secrets.token_hex(3),
            "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
        }
    ]


def thread_reply_event(
    *,
    user: str,
    channel: str,
    text: str,
    ts: str,
    thread_ts: str,
    team: str = TEAM_ID,
    user_team: str | None = None,
    channel_type: str = "channel",
) -> dict[str, Any]:
    """A `message` event for a person's reply in a thread whose parent the bot posted.

    `user_team`: the replier belongs to another organisation (a shared channel), so the
    event carries their team as `team`, `user_team` and `source_team`, and their profile.
    `channel_type`: "channel", "group", "im" (a DM) or "mpim" (a group DM). `text` is what the person
    typed: Slack sends its `&`, `<` and `>` escaped, so this does too.
    """
    event: dict[str, Any] = {
        "type": "message",
        "user": user,
        "text": text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),
        "ts": ts,
        "thread_ts": thread_ts,
        "parent_user_id": BOT_USER_ID,
        "client_msg_id": str(uuid.uuid4()),
        "team": team,
        "channel": channel,
        "channel_type": channel_type,
        "event_ts": ts,
        "blocks": _rich_text(text),
    }
    if user_team:
        name = USER_NAMES.get(user, user.lower())
        event.update(team=user_team, user_team=user_team, source_team=user_team)
        event["user_profile"] = {
            "avatar_hash": secrets.token_hex(6),
            "image_72": f"https://avatars.slack-edge.com/{secrets.token_hex(4)}_72.png",
            "first_name": name.title(),
            "real_name": name.title(),
            "display_name": name,
            "team": user_team,
            "name": name,
            "is_restricted": False,
            "is_ultra_restricted": False,
        }
    return event


def thread_broadcast_event(*, root: dict[str, Any], **reply: Any) -> dict[str, Any]:
    """A thread reply sent with "Also send to channel": subtype `thread_broadcast`, with the thread's `root`."""
    event = thread_reply_event(**reply)
    del event["parent_user_id"]
    root_fields = ("type", "text", "user", "ts", "team", "bot_id", "app_id", "thread_ts", "reply_count")
    event.update(subtype="thread_broadcast", root={k: root[k] for k in root_fields if k in root})
    return event


def file_share_reply_event(*, filename: str = "screenshot.png", **reply: Any) -> dict[str, Any]:
    """A thread reply with a file attached: subtype `file_share`, the text and `files[]`."""
    event = thread_reply_event(**reply)
    user, file_id = event["user"], "F" + secrets.token_hex(5).upper()
    private = f"https://files.slack.com/files-pri/{TEAM_ID}-{file_id}/{filename}"
    event.update(subtype="file_share", upload=False, display_as_bot=False)
    event["files"] = [
        {
            "id": file_id,
            "created": int(time.time()),
            "timestamp": int(time.time()),
            "name": filename,
            "title": filename,
            "mimetype": "image/png",
            "filetype": "png",
            "pretty_type": "PNG",
            "user": user,
            "editable": False,
            "size": 92582,
            "mode": "hosted",
            "is_external": False,
            "is_public": True,
            "url_private": private,
            "url_private_download": private.replace(file_id + "/", file_id + "/download/"),
            "permalink": f"{PERMALINK_BASE}/files/{user}/{file_id}/{filename}",
        }
    ]
    return event


def message_changed_event(*, channel: str, message: dict[str, Any], new_text: str) -> dict[str, Any]:
    """Someone edited `message` (a thread reply): subtype `message_changed`, the message before and after."""
    now = f"{time.time():.6f}"
    edited = {**message, "text": new_text, "edited": {"user": message["user"], "ts": now}}
    return {
        "type": "message",
        "subtype": "message_changed",
        "message": edited,
        "previous_message": message,
        "channel": channel,
        "hidden": True,
        "ts": now,
        "event_ts": now,
        "channel_type": "channel",
    }


def bot_message_event(*, channel: str, text: str, ts: str, thread_ts: str) -> dict[str, Any]:
    """A message an integration posted in the thread: subtype `bot_message`, a `bot_id` and no user."""
    return {
        "type": "message",
        "subtype": "bot_message",
        "text": text,
        "ts": ts,
        "thread_ts": thread_ts,
        "bot_id": "B0OTHERBOT",
        "username": "deploy-notifier",
        "channel": channel,
        "event_ts": ts,
        "channel_type": "channel",
    }


def app_home_opened_event(user: str, view: dict[str, Any] | None = None) -> dict[str, Any]:
    """`app_home_opened` for the Home tab; `view` is present once a Home view was published."""
    event: dict[str, Any] = {
        "type": "app_home_opened",
        "user": user,
        "channel": "D" + user[1:],
        "tab": "home",
        "event_ts": f"{time.time():.6f}",
    }
    if view is not None:
        event["view"] = view
    return event
