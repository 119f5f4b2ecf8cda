"""What `Parley` and `AsyncParley` share: errors, request bodies, answers, the poll schedule.

Only I/O differs between the two clients, so everything else lives here once.
"""

from __future__ import annotations

import math
import time
from typing import Any

import httpx

from workers.interaction import AnswerValue, Request

MAX_POLL = 60  # the longest wait the API holds one request
TIMEOUT = httpx.Timeout(10.0, read=MAX_POLL + 15)


class ParleyAPIError(Exception):
    """An error answer of the API: `status` and the problem document it sent.

    It roots the client's own errors, apart from the server's `workers.exceptions.ParleyError`. So
    this module works without the rest of Parley. The tree::

        ParleyAPIError              any error answer (`status`, `problem`)
        ├── QuestionExpiredError    nobody answered in time (410)
        ├── QuestionCancelledError  cancelled before anyone answered (409)
        └── QuestionTimeoutError    `timeout` passed; the question is still open (408)

    Transport failures are httpx's own (`httpx.HTTPError`).
    """

    __module__ = "parley.client"

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        super().__init__(f"HTTP {status}: {problem.get('detail') or problem.get('title') or problem}")


class QuestionExpiredError(ParleyAPIError):
    """Nobody answered in time, and the request did not ask for defaults."""

    __module__ = "parley.client"


class QuestionCancelledError(ParleyAPIError):
    """The question was cancelled before anyone answered."""

    __module__ = "parley.client"


class QuestionTimeoutError(ParleyAPIError):
    """`timeout` passed with the question still waiting.

    It stays open, so wait on its id again.
    """

    __module__ = "parley.client"


Call = tuple[str, str, dict[str, Any]]  # method, path under /api/v1, httpx keyword arguments


def submit_call(request: Request | dict[str, Any], idempotency_key: str | None, **fields: Any) -> Call:
    """`POST /questions` for `request` and the optional `fields` that are set."""
    body = {"request": request.model_dump(mode="json") if isinstance(request, Request) else request, **fields}
    body["metadata"] = body.get("metadata") or {}
    return _post("/questions", body, idempotency_key)


def approval_call(body: dict[str, Any], idempotency_key: str | None) -> Call:
    """`POST /approvals` with the fields of `body` that are set."""
    return _post("/approvals", body, idempotency_key)


def _post(path: str, body: dict[str, Any], idempotency_key: str | None) -> Call:
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
    return "POST", path, {"json": {k: v for k, v in body.items() if v is not None}, "headers": headers}


def reveal(reveal_secrets: bool) -> dict[str, str]:
    return {"reveal": "secrets"} if reveal_secrets else {}


def result(resp: httpx.Response) -> dict[str, Any]:
    """The body of a success answer.

    An error answer raises `ParleyAPIError` with its problem.
    """
    if resp.status_code >= 400:
        try:
            problem = resp.json()
        except ValueError:
            problem = {"detail": resp.text}
        raise ParleyAPIError(resp.status_code, problem)
    body: dict[str, Any] = resp.json()
    return body


def deadline_of(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def poll_params(deadline: float | None, reveal_secrets: bool) -> dict[str, Any]:
    """The next long-poll's query: at most `MAX_POLL` seconds, ending at `deadline`.

    The API takes whole seconds, so the time left is rounded up. Rounding down would send `?wait=0`
    again and again in the last second. That is a busy loop against the server.
    """
    left = MAX_POLL if deadline is None else max(0, min(MAX_POLL, math.ceil(deadline - time.monotonic())))
    return {"wait": left, **reveal(reveal_secrets)}


def answers_of(question: dict[str, Any], deadline: float | None) -> dict[str, AnswerValue] | None:
    """A closed question's answers, None to poll again, or its end's error."""
    status = question["status"]
    if status == "answered" or (status == "expired" and question.get("answers") is not None):
        return dict(question["answers"])
    if status == "expired":
        raise QuestionExpiredError(410, question)
    if status == "cancelled":
        raise QuestionCancelledError(409, question)
    if status == "failed":
        raise ParleyAPIError(422, {"detail": question.get("error"), **question})
    if deadline is not None and time.monotonic() >= deadline:
        raise QuestionTimeoutError(408, question)
    return None


def approve_call(
    action: str,
    args: dict[str, Any],
    *,
    channel: str,
    schema: dict[str, Any] | None,
    editable: bool | list[str],
    assignees: list[str] | None,
    expires_in: int | None,
    callback_url: str | None,
    idempotency_key: str | None,
) -> Call:
    """`POST /approvals` asking to approve `action` with `args`."""
    body = {
        "channel": channel,
        "action": action,
        "args": args,
        "schema": schema,
        "editable": editable,
        "assignees": assignees,
        "expires_in": expires_in,
        "callback_url": callback_url,
    }
    return _post("/approvals", body, idempotency_key)
