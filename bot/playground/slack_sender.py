"""What Slack sends to an app's Request URL: built from the playground workspace, signed, POSTed.

Every person's action on the playground page becomes the request Slack itself would make. So the
bot under test cannot tell the playground from Slack:

* Slash commands: ``application/x-www-form-urlencoded`` fields. Those are ``token``,
  ``team_id``, ``team_domain``, ``channel_id``, ``channel_name``, ``user_id``, ``user_name``,
  ``command``, ``text``, ``api_app_id``, ``is_enterprise_install``, ``response_url`` and
  ``trigger_id``.
* ``block_actions``, ``view_submission``, ``block_suggestion``: a form body with one
  ``payload=<json>`` field.
* Events API (``message``, ``app_home_opened``): an ``event_callback`` JSON envelope.

Each request carries ``X-Slack-Request-Timestamp`` and ``X-Slack-Signature``. slack_sdk's
``SignatureVerifier`` makes the signature, the code bolt verifies it with. The builders are pure
functions of their arguments. ``SlackSender`` adds the clock, the trigger ids and HTTP. Trigger
ids come from ``Workspace.issue_trigger``, so ``views.open`` knows whose modal it is.
"""

from __future__ import annotations

import json
import secrets
import string
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
from slack_sdk.signature import SignatureVerifier

from bot.playground.blockstate import Inputs, action_entry, find_element, state_values, with_ids
from bot.playground.workspace import Workspace

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
USER_AGENT = "Slackbot 1.0 (+https://api.slack.com/robots)"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """Slack's request signature for ``body``, made by slack_sdk's own signer."""
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    if signature is None:  # slack_sdk returns None only without a timestamp
        raise ValueError("a Slack signature needs a timestamp")
    return signature


def signed_headers(secret: str, body: bytes, content_type: str, now: float | None = None) -> dict[str, str]:
    """The headers Slack sends with ``body``: content type, timestamp and signature."""
    timestamp = str(int(time.time() if now is None else now))
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": sign(secret, timestamp, body),
        "User-Agent": USER_AGENT,
    }


def form_body(fields: dict[str, str]) -> bytes:
    return urlencode(fields).encode()


def payload_body(payload: dict[str, Any]) -> bytes:
    """An interaction payload as Slack posts it: ``payload=<url-encoded JSON>``."""
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))}).encode()


def action_ts(now: float | None = None) -> str:
    return f"{time.time() if now is None else now:.6f}"


def user_object(ws: Workspace, user_id: str) -> dict[str, Any]:
    """``user`` in interaction payloads: ``{"id", "username", "name", "team_id"}``."""
    user = ws.user(user_id)
    name = user.name if user else user_id
    return {"id": user_id, "username": name, "name": name, "team_id": ws.team_id}


def _team(ws: Workspace) -> dict[str, Any]:
    return {"id": ws.team_id, "domain": ws.team_domain}


def _channel_name(ws: Workspace, channel: str) -> str:
    found = next((c for c in ws.channels() if c.id == channel), None)
    return found.name if found else "directmessage"


@dataclass(frozen=True)
class MessageSurface:
    """A message (or an ephemeral message) holding the blocks a person used."""

    channel: str
    message: dict[str, Any]
    ephemeral: bool = False

    def container(self) -> dict[str, Any]:
        out = {"type": "message", "message_ts": self.message["ts"], "channel_id": self.channel}
        out["is_ephemeral"] = self.ephemeral
        if self.message.get("thread_ts"):
            out["thread_ts"] = self.message["thread_ts"]
        return out


@dataclass(frozen=True)
class ViewSurface:
    """A modal or an App Home tab holding the blocks a person used."""

    view: dict[str, Any]

    def container(self) -> dict[str, Any]:
        return {"type": "view", "view_id": self.view["id"]}


Surface = MessageSurface | ViewSurface


def _interaction(ws: Workspace, token: str, kind: str, user: str, surface: Surface) -> dict[str, Any]:
    payload: dict[str, Any] = {"type": kind, "user": user_object(ws, user), "api_app_id": ws.app_id, "token": token}
    payload["container"] = surface.container()
    payload.update(team=_team(ws), enterprise=None, is_enterprise_install=False)
    if isinstance(surface, MessageSurface):
        payload["channel"] = {"id": surface.channel, "name": _channel_name(ws, surface.channel)}
    return payload


def _blocks_of(surface: Surface) -> list[dict[str, Any]]:
    source = surface.message if isinstance(surface, MessageSurface) else surface.view
    return with_ids(source.get("blocks"))


def _view_with_state(view: dict[str, Any], inputs: Inputs | None) -> dict[str, Any]:
    blocks = with_ids(view.get("blocks"))
    return {**view, "blocks": blocks, "state": {"values": state_values(blocks, inputs)}}


def slash_command(
    ws: Workspace, token: str, *, user: str, channel: str, command: str, text: str, trigger_id: str, response_url: str
) -> dict[str, str]:
    """The form fields of a slash command, in the order Slack sends them."""
    member = ws.user(user)
    return {
        "token": token,
        "team_id": ws.team_id,
        "team_domain": ws.team_domain,
        "channel_id": channel,
        "channel_name": _channel_name(ws, channel),
        "user_id": user,
        "user_name": member.name if member else user,
        "command": command,
        "text": text,
        "api_app_id": ws.app_id,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }


def block_actions(
    ws: Workspace,
    token: str,
    *,
    user: str,
    surface: Surface,
    block_id: str,
    action_id: str,
    value: Any = None,
    inputs: Inputs | None = None,
    trigger_id: str,
    response_url: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """A ``block_actions`` payload for element ``block_id``/``action_id`` of ``surface``.

    ``value`` is the raw value of the element used, say a select's option value. ``inputs`` holds
    every control's raw value and becomes ``state.values``.
    """
    blocks = _blocks_of(surface)
    element = find_element(blocks, block_id, action_id)
    if element is None:
        raise LookupError(f"no element {block_id}/{action_id} on this surface")
    payload = _interaction(ws, token, "block_actions", user, surface)
    payload["trigger_id"] = trigger_id
    if isinstance(surface, MessageSurface):
        if not surface.ephemeral:
            payload["message"] = {**surface.message, "blocks": blocks}
        payload["state"] = {"values": state_values(blocks, inputs)}
        if response_url:
            payload["response_url"] = response_url
    else:
        payload["view"] = _view_with_state(surface.view, inputs)
    payload["actions"] = [action_entry(element, block_id, value, action_ts(now))]
    return payload


def view_submission(
    ws: Workspace, token: str, *, user: str, view: dict[str, Any], inputs: Inputs | None, trigger_id: str
) -> dict[str, Any]:
    """A ``view_submission`` payload: the modal as it stands, with ``state.values`` from ``inputs``."""
    payload: dict[str, Any] = {"type": "view_submission", "team": _team(ws), "user": user_object(ws, user)}
    payload.update(api_app_id=ws.app_id, token=token, trigger_id=trigger_id)
    payload["view"] = _view_with_state(view, inputs)
    payload.update(response_urls=[], is_enterprise_install=False, enterprise=None)
    return payload


def view_closed(ws: Workspace, token: str, *, user: str, view: dict[str, Any]) -> dict[str, Any]:
    """A ``view_closed`` payload (sent only for modals opened with ``notify_on_close``)."""
    payload: dict[str, Any] = {"type": "view_closed", "team": _team(ws), "user": user_object(ws, user)}
    payload.update(api_app_id=ws.app_id, token=token, view=view, is_cleared=False, is_enterprise_install=False)
    return payload


def block_suggestion(
    ws: Workspace, token: str, *, user: str, surface: Surface, block_id: str, action_id: str, value: str
) -> dict[str, Any]:
    """A ``block_suggestion`` payload: what the person typed into an external select."""
    payload = _interaction(ws, token, "block_suggestion", user, surface)
    payload.update(action_id=action_id, block_id=block_id, value=value)
    if isinstance(surface, MessageSurface) and not surface.ephemeral:
        payload["message"] = {**surface.message, "blocks": _blocks_of(surface)}
    elif isinstance(surface, ViewSurface):
        payload["view"] = _view_with_state(surface.view, None)
    return payload


def event_callback(ws: Workspace, token: str, event: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """The Events API envelope around ``event``, with a fresh ``event_id``."""
    at = int(time.time() if now is None else now)
    alphabet = string.ascii_uppercase + string.digits
    return {
        "token": token,
        "team_id": ws.team_id,
        "context_team_id": ws.team_id,
        "context_enterprise_id": None,
        "api_app_id": ws.app_id,
        "event": event,
        "type": "event_callback",
        "event_id": "Ev" + "".join(secrets.choice(alphabet) for _ in range(9)),
        "event_time": at,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": ws.team_id,
                "user_id": ws.bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": "4-" + secrets.token_urlsafe(24),
    }


def message_event(ws: Workspace, message: dict[str, Any], channel: str) -> dict[str, Any]:
    """The ``message`` event for a person's message, a reply with ``thread_ts``."""
    event: dict[str, Any] = {"client_msg_id": str(uuid.uuid4()), "type": "message", "text": message.get("text", "")}
    event.update(user=message["user"], ts=message["ts"], team=ws.team_id, channel=channel)
    event.update(event_ts=message["ts"], channel_type="channel")
    if message.get("thread_ts"):
        event["thread_ts"] = message["thread_ts"]
        if message.get("parent_user_id"):
            event["parent_user_id"] = message["parent_user_id"]
    return event


def app_home_opened_event(ws: Workspace, user: str, now: float | None = None) -> dict[str, Any]:
    """``app_home_opened`` for the Home tab, with the last published view, as Slack does."""
    event: dict[str, Any] = {"type": "app_home_opened", "user": user, "channel": "D" + user[1:], "tab": "home"}
    event["event_ts"] = action_ts(now)
    home = ws.home(user)
    if home is not None:
        event["view"] = home
    return event


@dataclass
class Delivery:
    """One request to the bot and how it answered."""

    kind: str
    status: int
    body: str
    elapsed: float
    error: str | None = None
    at: float = field(default_factory=time.time)

    @property
    def json(self) -> Any:
        """The ack body parsed as JSON, or ``None`` if empty or not JSON."""
        try:
            return json.loads(self.body) if self.body.strip() else None
        except json.JSONDecodeError:
            return None


class SlackSender:
    """Signs and POSTs Slack-format requests to the bot's Request URL."""

    def __init__(self, url: str, signing_secret: str, timeout: float = 10.0) -> None:
        self.url = url
        self.signing_secret = signing_secret
        self.timeout = timeout
        #: The (deprecated) verification token Slack puts in every payload.
        self.token = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(24))

    async def post(self, kind: str, body: bytes, content_type: str) -> Delivery:
        headers = signed_headers(self.signing_secret, body, content_type)
        started = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                resp = await client.post(self.url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return Delivery(kind, 0, "", time.monotonic() - started, f"{type(exc).__name__}: {exc}")
        return Delivery(kind, resp.status_code, resp.text, time.monotonic() - started)

    async def command(self, fields: dict[str, str]) -> Delivery:
        return await self.post("slash_command", form_body(fields), FORM)

    async def interaction(self, payload: dict[str, Any]) -> Delivery:
        return await self.post(str(payload["type"]), payload_body(payload), FORM)

    async def event(self, envelope: dict[str, Any]) -> Delivery:
        body = json.dumps(envelope, separators=(",", ":")).encode()
        return await self.post(str(envelope["event"]["type"]), body, JSON)
