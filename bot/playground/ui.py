"""The routes the playground page calls: its live state, and one route per kind of action.

``GET /ui/state?user=U…&since=N`` answers at once without ``since``. With it, it waits up to
``POLL_WAIT`` seconds for the workspace's change counter to pass ``N``. So the page stays live
with one open request. Action routes take JSON from the page and make the bot's request through
``SlackSender``. They apply the ack as Slack would. They answer ``{"ok", "status", ...}``, so
the page can show what happened.

Every action route takes only ``application/json`` from the page's own origin. A page on another
site can send a form or ``text/plain`` without a preflight. Its ``Origin`` says where it comes
from. A request without ``Origin``, as from a script on this machine, is let through.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bot.playground import agent_methods
from bot.playground import slack_sender as ss
from bot.playground.session import STATIC, Playground
from bot.playground.slack_sender import Delivery, MessageSurface, Surface, ViewSurface
from bot.playground.webapi import VIEW_BLOCK_LIMIT, validate_blocks

POLL_WAIT = 20.0
POLL_STEP = 0.1
DEFAULT_USER = "U0ALICE"


def _pg(request: Request) -> Playground:
    playground: Playground = request.app.state.playground
    return playground


def _base(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}"


async def state(request: Request) -> Response:
    pg = _pg(request)
    user = request.query_params.get("user") or DEFAULT_USER
    since = request.query_params.get("since")
    if since is not None and since.lstrip("-").isdigit():
        waited = 0.0
        while pg.ws.events <= int(since) and waited < POLL_WAIT:
            await asyncio.sleep(POLL_STEP)
            waited += POLL_STEP
            if await request.is_disconnected():
                return Response(status_code=204)
    return JSONResponse(pg.snapshot(user))


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


def _answer(delivery: Delivery, **extra: Any) -> JSONResponse:
    ok = delivery.status == 200 and delivery.error is None
    body = {"ok": ok, "status": delivery.status, "error": delivery.error, "ms": round(delivery.elapsed * 1000)}
    return JSONResponse({**body, **extra})


def _failure_text(command: str, delivery: Delivery) -> str:
    """What Slack tells a person whose slash command the app did not ack."""
    reason = "operation_timeout" if delivery.error and "Timeout" in delivery.error else "dispatch_failed"
    return f'{command} failed with the error "{reason}"'


async def message(request: Request) -> Response:
    """The composer: ``/command text`` is a slash command, anything else a message and event."""
    pg, data = _pg(request), await _json(request)
    user, channel = str(data.get("user") or DEFAULT_USER), str(data.get("channel") or "")
    text, thread_ts = str(data.get("text") or "").strip(), data.get("thread_ts") or None
    if not text or pg.ws.resolve_channel(channel) is None:
        return JSONResponse({"ok": False, "error": "empty message or unknown channel"}, status_code=400)
    if text.startswith("/"):
        command, _, rest = text.partition(" ")
        if thread_ts:
            pg.ws.post_ephemeral(channel, user, f"`{command}` is not supported in threads. Sorry!", thread_ts=thread_ts)
            return JSONResponse({"ok": False, "error": "not_in_threads"})
        if command not in pg.commands:
            note = f"`{command}` is not a valid command. In Slack, all messages that start with “/” are commands."
            pg.ws.post_ephemeral(channel, user, note)
            return JSONResponse({"ok": False, "error": "unknown_command"})
        fields = ss.slash_command(
            pg.ws,
            pg.sender.token,
            user=user,
            channel=channel,
            command=command,
            text=rest.strip(),
            trigger_id=pg.ws.issue_trigger(user),
            response_url=pg.hook(_base(request), user=user, channel=channel),
        )
        delivery = await pg.sender.command(fields)
        pg.record(delivery, f"{command} {rest}".strip())
        if delivery.status != 200 or delivery.error:
            pg.ws.post_ephemeral(channel, user, _failure_text(command, delivery))
        elif isinstance(delivery.json, dict):
            pg.apply_response({"user": user, "channel": channel}, delivery.json)
        elif delivery.body.strip():
            pg.ws.post_ephemeral(channel, user, delivery.body.strip())
        return _answer(delivery)
    posted = pg.ws.post_message(channel, text, user=user, thread_ts=thread_ts)
    envelope = ss.event_callback(pg.ws, pg.sender.token, ss.message_event(pg.ws, posted, channel))
    delivery = await pg.sender.event(envelope)
    pg.record(delivery, f"message: {text}")
    return _answer(delivery, ts=posted["ts"])


def _surface(pg: Playground, user: str, where: Any) -> Surface | None:
    """The surface the page's ``surface`` names, as ``user`` sees it.

    That is a message, an ephemeral message, a modal or the Home tab.
    """
    where = where if isinstance(where, dict) else {}
    kind = where.get("kind")
    if kind == "message":
        channel, ts = str(where.get("channel") or ""), str(where.get("ts") or "")
        if where.get("ephemeral"):
            found = next((e for e in pg.ws.ephemerals(user, channel) if e["ts"] == ts), None)
            return MessageSurface(channel, found, ephemeral=True) if found else None
        msg = pg.ws.message(channel, ts)
        return MessageSurface(channel, msg) if msg else None
    if kind == "view":
        view_id = str(where.get("view_id") or "")
        view = pg.ws.view(view_id)
        return ViewSurface(view) if view and pg.ws.view_owner(view_id) == user else None
    if kind == "home":
        home = pg.ws.home(user)
        return ViewSurface(home) if home else None
    return None


async def action(request: Request) -> Response:
    """A button click or a menu choice: ``block_actions`` with the surface's ``state.values``."""
    pg, data = _pg(request), await _json(request)
    user = str(data.get("user") or DEFAULT_USER)
    surface = _surface(pg, user, data.get("surface"))
    if surface is None:
        return JSONResponse({"ok": False, "error": "this message or view is gone"}, status_code=404)
    hook = None
    if isinstance(surface, MessageSurface):
        ctx = {"user": user, "channel": surface.channel, "thread_ts": surface.message.get("thread_ts")}
        hook = pg.hook(_base(request), **ctx, message_ts=surface.message["ts"], ephemeral=surface.ephemeral)
    try:
        payload = ss.block_actions(
            pg.ws,
            pg.sender.token,
            user=user,
            surface=surface,
            block_id=str(data.get("block_id")),
            action_id=str(data.get("action_id")),
            value=data.get("value"),
            inputs=data.get("inputs"),
            trigger_id=pg.ws.issue_trigger(user),
            response_url=hook,
        )
    except LookupError as exc:
        return JSONResponse({"ok": False, "error": str(exc)}, status_code=404)
    delivery = await pg.sender.interaction(payload)
    pg.record(delivery, f"block_actions: {data.get('action_id')}")
    return _answer(delivery)


async def stop_session(request: Request) -> Response:
    """A click on a thread's agent session stop button sends `agent_session_stopped`."""
    pg, data = _pg(request), await _json(request)
    user = str(data.get("user") or DEFAULT_USER)
    channel, thread_ts = str(data.get("channel") or ""), str(data.get("thread_ts") or "")
    if (channel, thread_ts) not in pg.ws.agents.sessions:
        return JSONResponse({"ok": False, "error": "this thread has no agent session"}, status_code=404)
    event = agent_methods.stopped_event(pg.ws, user, channel, thread_ts, time.time())
    delivery = await pg.sender.event(ss.event_callback(pg.ws, pg.sender.token, event))
    pg.record(delivery, "agent_session_stopped")
    return _answer(delivery)


async def submit_view(request: Request) -> Response:
    """A modal's Submit sends ``view_submission``.

    The ack closes, updates, pushes or shows errors.
    """
    pg, data = _pg(request), await _json(request)
    user, view_id = str(data.get("user") or DEFAULT_USER), str(data.get("view_id") or "")
    view = pg.ws.view(view_id)
    if view is None or pg.ws.view_owner(view_id) != user:
        return JSONResponse({"ok": False, "error": "this modal is closed"}, status_code=404)
    payload = ss.view_submission(
        pg.ws, pg.sender.token, user=user, view=view, inputs=data.get("inputs"), trigger_id=pg.ws.issue_trigger(user)
    )
    delivery = await pg.sender.interaction(payload)
    pg.record(delivery, f"view_submission: {view.get('callback_id')}")
    if delivery.status != 200 or delivery.error:
        return _answer(delivery, notice="We had some trouble connecting. Try again?")
    ack = delivery.json if isinstance(delivery.json, dict) else {}
    kind = ack.get("response_action")
    if kind == "errors":
        return _answer(delivery, errors=ack.get("errors") or {})
    if kind in ("update", "push"):
        new = ack.get("view")
        problems = validate_blocks((new or {}).get("blocks", []), VIEW_BLOCK_LIMIT, "/view/blocks", surface="modal")
        if not isinstance(new, dict) or problems:
            return _answer(delivery, notice=f"The app answered with an invalid view: {problems[:3]}")
        if kind == "update":
            pg.ws.update_view(new, view_id)
        else:
            pg.ws.open_view(user, {**new, "previous_view_id": view_id})
        return _answer(delivery)
    pg.ws.close_view(view_id)
    return _answer(delivery)


async def close_view(request: Request) -> Response:
    """Cancel or close on a modal.

    ``view_closed`` reaches the bot only if it asked (``notify_on_close``).
    """
    pg, data = _pg(request), await _json(request)
    user, view_id = str(data.get("user") or DEFAULT_USER), str(data.get("view_id") or "")
    view = pg.ws.view(view_id)
    if view is None or pg.ws.view_owner(view_id) != user:
        return JSONResponse({"ok": True})
    pg.ws.close_view(view_id)
    if view.get("notify_on_close"):
        delivery = await pg.sender.interaction(ss.view_closed(pg.ws, pg.sender.token, user=user, view=view))
        pg.record(delivery, f"view_closed: {view.get('callback_id')}")
        return _answer(delivery)
    return JSONResponse({"ok": True})


async def suggest(request: Request) -> Response:
    """Type-ahead in an external select sends ``block_suggestion``.

    The ack carries ``options`` or ``option_groups``.
    """
    pg, data = _pg(request), await _json(request)
    user = str(data.get("user") or DEFAULT_USER)
    surface = _surface(pg, user, data.get("surface"))
    if surface is None:
        return JSONResponse({"ok": False, "error": "this message or view is gone"}, status_code=404)
    payload = ss.block_suggestion(
        pg.ws,
        pg.sender.token,
        user=user,
        surface=surface,
        block_id=str(data.get("block_id")),
        action_id=str(data.get("action_id")),
        value=str(data.get("value") or ""),
    )
    delivery = await pg.sender.interaction(payload)
    pg.record(delivery, f"block_suggestion: {data.get('value') or ''}")
    ack = delivery.json if isinstance(delivery.json, dict) else {}
    return _answer(delivery, options=ack.get("options") or [], option_groups=ack.get("option_groups") or [])


async def open_home(request: Request) -> Response:
    """The person opened the app's Home tab: ``app_home_opened``."""
    pg, data = _pg(request), await _json(request)
    user = str(data.get("user") or DEFAULT_USER)
    envelope = ss.event_callback(pg.ws, pg.sender.token, ss.app_home_opened_event(pg.ws, user))
    delivery = await pg.sender.event(envelope)
    pg.record(delivery, "app_home_opened")
    return _answer(delivery)


async def hook(request: Request) -> Response:
    """A ``response_url``: post, replace or delete a message, at most five times in thirty minutes."""
    pg = _pg(request)
    ctx = pg.claim_hook(request.path_params["token"])
    if isinstance(ctx, str):
        return PlainTextResponse(ctx, status_code=404)
    body = await _json(request)
    if not body:
        return PlainTextResponse("invalid_payload", status_code=400)
    pg.apply_response(ctx, body)
    return PlainTextResponse("ok")


async def status(request: Request) -> Response:
    """Whether the bot answers its health check."""
    health = _pg(request).sender.url.replace("/slack/events", "/healthz")
    try:
        async with httpx.AsyncClient(timeout=2) as client:
            ok = (await client.get(health)).status_code == 200
    except httpx.HTTPError:
        ok = False
    return JSONResponse({"bot": {"healthy": ok, "url": _pg(request).sender.url}})


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})


Endpoint = Callable[[Request], Awaitable[Response]]


def page_write(endpoint: Endpoint) -> Endpoint:
    """`endpoint`, answering only JSON from the page's own origin.

    Other content types get 415, other origins 403.
    """

    @functools.wraps(endpoint)
    async def guarded(request: Request) -> Response:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return JSONResponse({"ok": False, "error": "send Content-Type: application/json"}, status_code=415)
        origin = request.headers.get("origin")
        if origin is not None and origin != _base(request):
            return JSONResponse({"ok": False, "error": f"origin {origin!r} may not act here"}, status_code=403)
        return await endpoint(request)

    return guarded


def ui_routes() -> list[Route]:
    return [
        Route("/", index),
        Route("/ui/state", state),
        Route("/ui/status", status),
        Route("/ui/message", page_write(message), methods=["POST"]),
        Route("/ui/action", page_write(action), methods=["POST"]),
        Route("/ui/stop", page_write(stop_session), methods=["POST"]),
        Route("/ui/view/submit", page_write(submit_view), methods=["POST"]),
        Route("/ui/view/close", page_write(close_view), methods=["POST"]),
        Route("/ui/suggest", page_write(suggest), methods=["POST"]),
        Route("/ui/home", page_write(open_home), methods=["POST"]),
        Route("/hooks/{token}", hook, methods=["POST"]),
    ]
