"""Slack Web API stand-in: the subset of methods Parley uses, in Slack's wire format.

``create_webapi(workspace)`` returns a Starlette app answering ``POST|GET /<method>`` as
slack.com/api does:
- form or JSON bodies, and a ``Bearer`` token
- HTTP 200 with ``{"ok": false, "error": ...}`` for Slack-level errors
- 429 with ``Retry-After`` for rate limits
- an ``x-slack-req-id`` header on every response
Block Kit payloads are checked against the limits Slack enforces server-side. That includes ones
slack_sdk's models let through. Lengths are counted in UTF-16 code units (`bot.slack.limits`).
So code passing here is not rejected in production with ``invalid_blocks`` or
``msg_blocks_too_long``. A modal over Parley's view budget is refused too. Slack documents no
limit, but fails large views without an error (see `bot.slack.limits`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from bot.playground import agent_methods, app_methods, conversations
from bot.playground.slack_error import SlackError
from bot.playground.workspace import Workspace
from bot.slack import limits
from bot.slack.limits import utf16_len

MESSAGE_BLOCK_LIMIT = limits.MAX_MESSAGE_BLOCKS
VIEW_BLOCK_LIMIT = limits.MAX_VIEW_BLOCKS
OPTION_TEXT_LIMIT = limits.OPTION_TEXT_MAX
OPTION_VALUE_LIMIT = limits.OPTION_VALUE_MAX
CHOICE_OPTIONS_LIMIT = limits.MAX_CHOICE_BUTTON_OPTIONS  # checkboxes and radio_buttons
_SURFACES = ("message", "modal", "home")
MODAL_ONLY = frozenset({"number_input", "email_text_input", "url_text_input"})
"""Elements Slack's element reference allows only in modals (the shared Slack contract, section 10)."""


def _option_errors(element: dict[str, Any], at: str) -> list[str]:
    """Check option limits that slack_sdk skips for dict-built static_select and radio_buttons."""
    errors: list[str] = []
    groups = [(f"{at}/options", element.get("options") or [])]
    for g, group in enumerate(element.get("option_groups") or []):
        groups.append(
            (f"{at}/option_groups/{g}/options", group.get("options") or [] if isinstance(group, dict) else [])
        )
    if element.get("type") in ("checkboxes", "radio_buttons") and len(groups[0][1]) > CHOICE_OPTIONS_LIMIT:
        errors.append(f"must have no more than {CHOICE_OPTIONS_LIMIT} items [json-pointer:{at}/options]")
    for where, options in groups:
        for j, option in enumerate(options):
            if not isinstance(option, dict):
                continue
            text = option.get("text")
            text = text.get("text", "") if isinstance(text, dict) else str(text or "")
            if utf16_len(text) > OPTION_TEXT_LIMIT:
                errors.append(
                    f"must be less than {OPTION_TEXT_LIMIT + 1} characters [json-pointer:{where}/{j}/text/text]"
                )
            if utf16_len(str(option.get("value", ""))) > OPTION_VALUE_LIMIT:
                errors.append(f"must be less than {OPTION_VALUE_LIMIT + 1} characters [json-pointer:{where}/{j}/value]")
    return errors


def validate_blocks(
    blocks: Any, limit: int = MESSAGE_BLOCK_LIMIT, pointer: str = "/blocks", surface: str = "message"
) -> list[str]:
    """Slack-style error strings for ``blocks`` on ``surface``.

    An empty list means Slack would accept them.
    """
    if not isinstance(blocks, list):
        return [f"must be an array [json-pointer:{pointer}]"]
    errors: list[str] = []
    if len(blocks) > limit:
        errors.append(f"must be no more than {limit} items [json-pointer:{pointer}]")
    seen: set[str] = set()
    for i, raw in enumerate(blocks):
        at = f"{pointer}/{i}"
        if not isinstance(raw, dict):
            errors.append(f"must be an object [json-pointer:{at}]")
            continue
        block_id = raw.get("block_id")
        if block_id is not None:
            if block_id in seen:
                errors.append(f"duplicate block_id {block_id!r} [json-pointer:{at}/block_id]")
            seen.add(block_id)
        elements = [(f"{at}/{key}", raw.get(key)) for key in ("accessory", "element")]
        elements += [(f"{at}/elements/{j}", el) for j, el in enumerate(raw.get("elements") or [])]
        option_errors = [e for where, el in elements if isinstance(el, dict) for e in _option_errors(el, where)]
        if surface != "modal":
            option_errors += [
                f"element type {el['type']!r} is only allowed in modals [json-pointer:{where}/type]"
                for where, el in elements
                if isinstance(el, dict) and el.get("type") in MODAL_ONLY
            ]
        errors.extend(option_errors)
        if option_errors:
            continue  # slack_sdk would only restate some of these
        try:
            block = Block.parse(raw)
            if block is None:
                errors.append(f"unsupported block type {raw.get('type')!r} [json-pointer:{at}/type]")
            else:
                block.to_dict()
        except (SlackObjectFormationError, TypeError, ValueError, AttributeError, KeyError) as exc:
            errors.append(f"{exc} [json-pointer:{at}]")
    return errors


def _refuse(errors: list[str], error: str = "invalid_blocks") -> None:
    messages = [f"[ERROR] {e}" for e in errors]
    raise SlackError(error, errors=errors, response_metadata={"messages": messages})


def _check_blocks(blocks: Any, surface: str = "message", pointer: str = "/blocks") -> None:
    """Refuse blocks as Slack does.

    `invalid_blocks` names each problem. `msg_blocks_too_long` is for a message's text over 12,000.
    Lengths slack_sdk counts in code points are counted again in UTF-16.
    """
    errors = validate_blocks(
        blocks, MESSAGE_BLOCK_LIMIT if surface == "message" else VIEW_BLOCK_LIMIT, pointer, surface=surface
    )
    if errors:
        _refuse(errors)
    if surface == "message" and limits.text_length(blocks) > limits.MAX_MESSAGE_TEXT:
        raise SlackError("msg_blocks_too_long")
    if blocks and (problems := limits.block_problems(blocks, surface=surface)):  # [] clears a message's blocks
        _refuse(problems)


def _check_view(view: Any, kind: str | None = None) -> dict[str, Any]:
    if not isinstance(view, dict) or (kind and view.get("type") != kind):
        raise SlackError("invalid_arguments", response_metadata={"messages": [f"[ERROR] view must be a {kind} view"]})
    surface = str(view["type"]) if view.get("type") in _SURFACES else "modal"
    _check_blocks(view.get("blocks", []), surface, "/view/blocks")
    try:
        View(**view).to_dict()
    except (SlackObjectFormationError, TypeError, ValueError) as exc:
        raise SlackError("invalid_arguments", response_metadata={"messages": [f"[ERROR] {exc}"]}) from exc
    if surface == "modal" and view.get("blocks") and (problems := limits.view_problems(view)):
        _refuse(problems)  # the modal budget: Slack would fail it without an error
    return view


def _require(args: dict[str, Any], name: str, error: str = "invalid_arguments") -> str:
    value = args.get(name)
    if not value:
        raise SlackError(error)
    return str(value)


def _decode(args: dict[str, Any]) -> dict[str, Any]:
    """JSON-decode ``blocks`` or ``view`` sent as form-body strings.

    That is how slack_sdk sends ``params``. Undecodable strings are left as they are, and the
    validators reject them.
    """
    for key in ("blocks", "view", "attachments", "metadata"):
        if isinstance(args.get(key), str):
            with contextlib.suppress(json.JSONDecodeError):
                args[key] = json.loads(args[key])
    return args


class _Api:
    """Method handlers, each taking decoded args and returning the success body."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.handlers: dict[str, Callable[[dict[str, Any], str, Request], dict[str, Any]]] = {
            "auth.test": self.auth_test,
            "chat.postMessage": self.post_message,
            "chat.update": self.update,
            "chat.postEphemeral": self.post_ephemeral,
            "chat.getPermalink": self.permalink,
            "views.open": self.views_open,
            "views.update": self.views_update,
            "views.publish": self.views_publish,
            "users.info": self.users_info,
            "conversations.join": functools.partial(conversations.join, ws),
            "conversations.list": functools.partial(conversations.list_channels, ws),
            "conversations.replies": functools.partial(conversations.replies, ws),
            "conversations.open": functools.partial(conversations.open_dm, ws),
            "usergroups.users.list": functools.partial(conversations.usergroup_users, ws),
            "apps.connections.open": functools.partial(app_methods.connections_open, ws),
            "apps.manifest.create": functools.partial(app_methods.manifest_create, ws),
            "oauth.v2.access": self.oauth_access,
            "agents.sessions.setStatus": functools.partial(agent_methods.set_status, ws),
            "agents.sessions.rename": functools.partial(agent_methods.rename, ws),
            "assistant.threads.setStatus": functools.partial(agent_methods.assistant_status, ws),
            "chat.startStream": functools.partial(agent_methods.start_stream, ws),
            "chat.appendStream": functools.partial(agent_methods.append_stream, ws),
            "chat.stopStream": functools.partial(agent_methods.stop_stream, ws, check=self._check_agent_blocks),
        }

    def _check_agent_blocks(self, blocks: Any) -> None:
        _check_blocks(blocks)
        agent_methods.refuse_agent_blocks(self.ws, blocks)

    def oauth_access(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        return self.ws.installs.access(args, request.headers.get("authorization", ""))

    def _channel(self, args: dict[str, Any]) -> str:
        channel = self.ws.resolve_channel(str(args.get("channel") or ""))
        if channel is None:
            raise SlackError("channel_not_found")
        return channel

    def auth_test(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        url = f"{request.url.scheme}://{request.url.netloc}/"
        installed = self.ws.installs.identity(token, url)  # a token an install was given
        if installed is not None:
            return installed
        return {
            "url": url,
            "team": self.ws.team_name,
            "user": "parley",
            "team_id": self.ws.team_id,
            "user_id": self.ws.bot_user_id,
            "bot_id": self.ws.bot_id,
            "is_enterprise_install": False,
        }

    def post_message(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        channel = self._channel(args)
        known = self.ws.channel(channel)
        if known is not None and not known.bot_is_member:
            raise SlackError("not_in_channel")  # Parley asks for no chat:write.public
        if not args.get("text") and not args.get("blocks"):
            raise SlackError("no_text")
        if "blocks" in args:
            _check_blocks(args["blocks"])
            agent_methods.refuse_agent_blocks(self.ws, args["blocks"])
        extra = {k: args.get(k) for k in ("metadata", "reply_broadcast", "attachments")}
        msg = self.ws.post_message(
            channel, str(args.get("text") or ""), args.get("blocks"), thread_ts=args.get("thread_ts"), **extra
        )
        return {"channel": channel, "ts": msg["ts"], "message": msg}

    def update(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        channel = self._channel(args)
        ts = _require(args, "ts", "message_not_found")
        current = self.ws.message(channel, ts)
        if current is None:
            raise SlackError("message_not_found")
        if current["user"] != self.ws.bot_user_id:
            raise SlackError("cant_update_message")
        if "markdown_text" in args:  # not with text or blocks; up to 12,000 characters, as chat.appendStream's
            if "text" in args or "blocks" in args:
                raise SlackError("invalid_arguments")
            args = {"text": agent_methods.markdown_of(args)}
        if "blocks" in args:
            _check_blocks(args["blocks"])
            agent_methods.refuse_agent_blocks(self.ws, args["blocks"])
        if "text" not in args and "blocks" not in args:
            raise SlackError("no_text")
        msg = self.ws.update_message(channel, ts, args.get("text"), args.get("blocks"))
        assert msg is not None
        return {"channel": channel, "ts": ts, "text": msg["text"], "message": msg}

    def post_ephemeral(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        channel = self._channel(args)
        user = _require(args, "user", "user_not_found")
        if self.ws.user(user) is None:
            raise SlackError("user_not_found")
        if not args.get("text") and not args.get("blocks"):
            raise SlackError("no_text")
        if "blocks" in args:
            _check_blocks(args["blocks"])
        ts = self.ws.post_ephemeral(
            channel, user, str(args.get("text") or ""), args.get("blocks"), args.get("thread_ts")
        )
        return {"message_ts": ts}

    def permalink(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        channel = self._channel(args)
        msg = self.ws.message(channel, _require(args, "message_ts", "message_not_found"))
        if msg is None:
            raise SlackError("message_not_found")
        base = self.ws.permalink_base or f"{request.url.scheme}://{request.url.netloc}"
        link = f"{base.rstrip('/')}/archives/{channel}/p{msg['ts'].replace('.', '')}"
        if msg.get("thread_ts", msg["ts"]) != msg["ts"]:
            link += f"?thread_ts={msg['thread_ts']}&cid={channel}"
        return {"channel": channel, "permalink": link}

    def views_open(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        trigger = _require(args, "trigger_id", "invalid_trigger_id")
        view = _check_view(args.get("view"), "modal")
        owner = self.ws.claim_trigger(trigger)
        if owner is None:
            raise SlackError("trigger_exchanged")
        return {"view": self.ws.open_view(owner, view)}

    def views_update(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        if not args.get("view_id") and not args.get("external_id"):
            raise SlackError("invalid_arguments")
        view = _check_view(args.get("view"))
        result = self.ws.update_view(view, args.get("view_id"), args.get("external_id"), args.get("hash"))
        if isinstance(result, str):
            raise SlackError(result)
        return {"view": result}

    def views_publish(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        user = _require(args, "user_id", "user_not_found")
        if self.ws.user(user) is None:
            raise SlackError("user_not_found")
        result = self.ws.publish_home(user, _check_view(args.get("view"), "home"), args.get("hash"))
        if isinstance(result, str):
            raise SlackError(result)
        return {"view": result}

    def users_info(self, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
        user = self.ws.user(str(args.get("user") or ""))
        if user is None:
            raise SlackError("user_not_found")
        return {"user": user.to_slack(self.ws.team_id)}


async def _read_args(request: Request) -> dict[str, Any]:
    args: dict[str, Any] = dict(request.query_params)
    body = await request.body()
    if not body:
        return args
    if "json" in request.headers.get("content-type", ""):
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError as exc:
            raise SlackError("invalid_json") from exc
        if not isinstance(parsed, dict):
            raise SlackError("invalid_json")
        args.update(parsed)
    else:
        args.update(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    return args


def create_webapi(workspace: Workspace) -> Starlette:
    """Build the Web API as an ASGI app, mounted so ``<mount>/<method>`` is a method URL."""
    api = _Api(workspace)

    async def endpoint(request: Request) -> JSONResponse:
        method = request.path_params.get("method", "")
        headers = {"x-slack-req-id": uuid.uuid4().hex}
        if workspace.oauth_scopes is not None:  # as Slack sends the token's scopes with each reply
            headers["x-oauth-scopes"] = workspace.oauth_scopes
        token: str | None = None
        args: dict[str, Any] = {}
        status = 200
        body: dict[str, Any] = {}
        fault = None
        try:
            args = _decode(await _read_args(request))
            auth = request.headers.get("authorization", "")
            token = auth[7:].strip() if auth.lower().startswith("bearer ") else None
            token = token or args.pop("token", None)
            args.pop("token", None)
            handler = api.handlers.get(method)
            if handler is None:
                raise SlackError("unknown_method", req_method=method)
            fault = workspace.faults.take(method)
            if fault and fault.delay:
                await asyncio.sleep(fault.delay)
            if fault and fault.fails:
                status, body = fault.status, {"ok": False, "error": fault.error}
                if fault.messages:
                    body["response_metadata"] = {"messages": list(fault.messages)}
                if fault.retry_after is not None:
                    headers["Retry-After"] = str(fault.retry_after)
            else:
                if method not in app_methods.CLIENT_AUTH_METHODS:
                    app_methods.check_token(workspace, method, token)
                body = {"ok": True, **handler(args, token, request)}
        except SlackError as exc:
            body = {"ok": False, "error": exc.error, **exc.extra}
        error = None if body.get("ok") else str(body.get("error"))
        workspace.record_call(method, args, token, status, error)
        if fault and fault.hold:  # served and logged as Slack would have; only the reply is late
            await asyncio.sleep(fault.hold)
        return JSONResponse(body, status_code=status, headers=headers)

    async def authorize(request: Request) -> Response:
        """Slack's approval page, approved at once.

        `?team=T…` installs there. `enterprise=E…` alone installs org-wide. The browser then goes to
        `redirect_uri` with the code and the `state`.
        """
        q = request.query_params
        if q.get("client_id") != workspace.installs.client_id or not q.get("redirect_uri"):
            return JSONResponse({"ok": False, "error": "invalid_client_id"}, status_code=400)
        code = workspace.installs.authorize(
            q.get("team") or None, enterprise_id=q.get("enterprise") or None, user=q.get("user") or "U0ALICE"
        )
        target = f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q.get('state', '')})}"
        return RedirectResponse(target, status_code=302)

    routes = [
        Route("/oauth/v2/authorize", authorize, methods=["GET"]),
        Route("/{method}", endpoint, methods=["GET", "POST"]),
        Route("/", endpoint, methods=["GET", "POST"]),
    ]
    return Starlette(routes=routes)
