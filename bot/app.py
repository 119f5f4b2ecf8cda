"""The bolt `App`: one per bot process, built by `create_app` from its dependencies.

`process_before_response=True`: a listener's bounded work (decode, validate, one
atomic accept, one enqueue) runs before the HTTP response, and bolt answers as soon
as the listener returns; Web API calls run in lazy listeners after the ack. Bolt's
default instead polls for the ack and costs about ten milliseconds per request.
"""

from __future__ import annotations

from typing import Any

from slack_bolt import App, BoltResponse
from slack_bolt.error import BoltUnhandledRequestError

from bot.deps import BotDeps
from bot.listeners import actions, commands, events, options, views
from workers.logs import Log

log = Log("parley.bot")


def create_app(deps: BotDeps, *, signing_secret: str | None, token: str | None) -> App:
    app = App(
        token=token,
        signing_secret=signing_secret,
        client=deps.client,
        process_before_response=True,
        token_verification_enabled=False,
        raise_error_for_unhandled_request=True,
        request_verification_enabled=signing_secret is not None,
    )
    commands.register(app, deps)
    actions.register(app, deps)
    views.register(app, deps)
    events.register(app, deps)
    options.register(app, deps)

    @app.error
    def on_error(error: Exception, body: dict[str, Any]) -> BoltResponse:
        if isinstance(error, BoltUnhandledRequestError):
            return BoltResponse(status=404, body="")
        log.error("listener failed", exc=True, **_ctx(body))
        return BoltResponse(status=500, body="")

    return app


def _ctx(body: dict[str, Any]) -> dict[str, Any]:
    user = body.get("user_id") or (body.get("user") or {}).get("id") or (body.get("event") or {}).get("user")
    team = body.get("team_id") or (body.get("team") or {}).get("id")
    channel = body.get("channel_id") or (body.get("channel") or {}).get("id")
    return {"team": team, "channel": channel, "user": user}
