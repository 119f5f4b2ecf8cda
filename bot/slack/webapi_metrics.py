"""Counting every Slack Web API attempt, by method and outcome, from inside slack_sdk's retry loop.

slack_sdk offers no per-request hook. But its client hands every attempt's response or error to
each retry handler in turn, 200s included. `CountingHandler` goes first in the list. It counts
the attempt and never asks for a retry. So the real handlers after it behave as before: 429,
5xx, dropped connections. bolt copies a client's retry handlers into the clients it builds per
request. So listeners' `client` calls are counted too.
"""

from __future__ import annotations

from urllib.error import HTTPError

from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from workers import metrics


def method_of(url: str) -> str:
    """`https://slack.com/api/chat.postMessage?x=1` → `chat.postMessage` (names Parley's own calls only)."""
    return url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "unknown"


def outcome_of(response: HttpResponse | None, error: Exception | None) -> str:
    """One word from a fixed set (`metrics.SLACK_OUTCOMES`) for an attempt."""
    status = response.status_code if response is not None else getattr(error, "code", None)
    if status is None:
        return "connection_error" if error is not None and not isinstance(error, HTTPError) else "http_error"
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server_error"
    if status != 200:
        return "http_error"
    body = response.body if response is not None else None
    return "error" if isinstance(body, dict) and body.get("ok") is False else "ok"


class CountingHandler(RetryHandler):
    """A retry handler that retries nothing, counting each attempt it is shown."""

    def can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        metrics.slack_call(method_of(request.url), outcome_of(response, error))
        return False
