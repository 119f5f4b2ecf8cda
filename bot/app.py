"""The bolt `App`: one per bot process, built by `create_app` from its dependencies.

With `process_before_response=True`, a listener's bounded work runs before the HTTP response.
That work is decode, validate, one atomic accept, one enqueue. Bolt answers as soon as the
listener returns. Web API calls run in lazy listeners after the ack. Bolt's default instead
polls for the ack, costing about ten milliseconds per request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from slack_bolt import App, BoltRequest, BoltResponse
from slack_bolt.error import BoltUnhandledRequestError
from slack_bolt.logger import get_bolt_logger
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_bolt.middleware import Middleware
from slack_bolt.oauth.oauth_settings import OAuthSettings

from bot.deps import BotDeps
from bot.listeners import (
    actions,
    admin_actions,
    agent_session,
    away,
    claims,
    commands,
    events,
    feedback,
    inspect,
    installs,
    options,
    reassign,
    reply_proposals,
    views,
)
from bot.slack import payload_shape
from workers.logs import Log

log = Log("parley.bot")
TOKEN_SKIPPED = warning_client_prioritized_and_token_skipped()
"""Bolt's warning when it finds `SLACK_BOT_TOKEN` in the environment beside the `client` it is given:
the client carries that same token, so there is nothing for anyone to do about it."""


def _not_token_skipped(record: logging.LogRecord) -> bool:
    return record.getMessage() != TOKEN_SKIPPED


class RefuseMalformed(Middleware):
    """Answer 400 to a signed body whose shape cannot be read.

    Neither the listeners nor bolt's own middleware could read it. It is a `Middleware` rather than
    a function. Bolt calls a function middleware through its argument injection, on every request.
    And this runs on every request.
    """

    def process(self, *, req: BoltRequest, resp: BoltResponse, next: Callable[[], BoltResponse]) -> BoltResponse | None:
        reason = payload_shape.problem(req.body)
        if reason:
            log.warning("malformed request refused", reason=reason, **_ctx(req.body))
            return BoltResponse(status=400, body="")
        return next()


def create_app(deps: BotDeps, *, signing_secret: str | None, oauth_settings: OAuthSettings | None = None) -> App:
    """The bot's bolt app.

    Its token is the one `deps.client` carries. With `oauth_settings` (many workspaces), bolt finds
    it per request in the installation store.
    """
    bolt_log = get_bolt_logger(App)
    if _not_token_skipped not in bolt_log.filters:
        bolt_log.addFilter(_not_token_skipped)
    app = App(
        signing_secret=signing_secret,
        client=deps.client,
        oauth_settings=oauth_settings,
        process_before_response=True,
        token_verification_enabled=False,
        raise_error_for_unhandled_request=True,
        request_verification_enabled=signing_secret is not None,
        before_authorize=RefuseMalformed(),
    )

    # Bolt tries each listener's matchers in the order they were registered, at a cost on every
    # request: the answers come first, as the requests that must be acked fastest and the most
    # frequent.
    actions.register(app, deps)
    views.register(app, deps)
    events.register(app, deps)
    commands.register(app, deps)
    admin_actions.register(app, deps)
    options.register(app, deps)
    inspect.register(app, deps)
    installs.register(app, deps)
    reassign.register(app, deps)
    claims.register(app, deps)
    away.register(app, deps)
    reply_proposals.register(app, deps)
    agent_session.register(app, deps)
    feedback.register(app, deps)

    @app.error
    def on_error(error: Exception, body: dict[str, Any]) -> BoltResponse:
        if isinstance(error, BoltUnhandledRequestError):
            return BoltResponse(status=404, body="")
        if isinstance(error, redis.RedisError):
            # Nothing was written; Slack redelivers an event it got a 5xx for.
            log.error("Redis unavailable", exc=True, **_ctx(body))
            return BoltResponse(status=503, body="")
        log.error("listener failed", exc=True, **_ctx(body))
        return BoltResponse(status=500, body="")

    return app


def _ctx(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        return {}

    def obj(value: Any) -> dict[str, Any]:
        return value if isinstance(value, dict) else {}

    user = body.get("user_id") or obj(body.get("user")).get("id") or obj(body.get("event")).get("user")
    team = body.get("team_id") or obj(body.get("team")).get("id")
    channel = body.get("channel_id") or obj(body.get("channel")).get("id")
    return {"team": team, "channel": channel, "user": user}
