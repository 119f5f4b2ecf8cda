"""The Slack Web API client every Parley process uses: one base URL, kept-alive connections, retries."""

from __future__ import annotations

from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from bot.slack.transport import KeepAliveWebClient
from bot.slack.webapi_metrics import CountingHandler

RATE_LIMIT_RETRIES = 5
CONNECTION_RETRIES = 2
SERVER_ERROR_RETRIES = 2


def make_web_client(token: str | None, base_url: str, *, timeout: int = 10) -> KeepAliveWebClient:
    """A `WebClient` for `base_url` (Slack's, or a stand-in) that waits out 429's `Retry-After`.

    Connections stay open between calls (`transport`). Every attempt is counted in
    `parley_slack_api_calls_total` (`webapi_metrics`). A 500 or 503 is retried too, after half a
    second, then a second. Otherwise one failed `chat.update` would leave an answered question
    showing its controls for good.
    """
    return KeepAliveWebClient(
        token=token,
        base_url=base_url,
        timeout=timeout,
        retry_handlers=[
            CountingHandler(),  # first: counts every attempt, retries nothing
            ConnectionErrorRetryHandler(max_retry_count=CONNECTION_RETRIES),
            RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
            ServerErrorRetryHandler(max_retry_count=SERVER_ERROR_RETRIES),
        ],
    )
