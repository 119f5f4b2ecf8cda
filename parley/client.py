"""`parley.client.Parley`: the HTTP API from Python, on httpx.

    from parley.client import Parley, QuestionExpiredError

    parley = Parley("https://parley.example.com", token=os.environ["PARLEY_TOKEN"])
    answers = parley.ask({"reason": "Deploy v1.4.2?", "items": [...]}, channel="C0GENERAL", timeout=3600)

`ask` posts the question and waits for it; `submit` only posts it and returns its id;
`wait` waits for a question posted earlier. Waiting is a series of long-polls
(`GET /api/v1/questions/{id}?wait=N`), each returning as soon as the question closes.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from workers.interaction import AnswerValue, Decision, Request

__all__ = [
    "MAX_POLL",
    "Parley",
    "ParleyAPIError",
    "QuestionCancelledError",
    "QuestionExpiredError",
    "QuestionTimeoutError",
]

MAX_POLL = 60  # the longest wait the API holds one request


class ParleyAPIError(Exception):
    """An error answer of the API: `status` and the problem document it sent.

    The root of the client's own errors, apart from the server's `workers.exceptions.ParleyError`
    so that this module works without the rest of Parley. The tree::

        ParleyAPIError              any error answer (`status`, `problem`)
        ├── QuestionExpiredError    nobody answered in time (410)
        ├── QuestionCancelledError  cancelled before anyone answered (409)
        └── QuestionTimeoutError    `timeout` passed; the question is still open (408)

    Transport failures are httpx's own (`httpx.HTTPError`).
    """

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        super().__init__(f"HTTP {status}: {problem.get('detail') or problem.get('title') or problem}")


class QuestionExpiredError(ParleyAPIError):
    """Nobody answered in time (and the request did not ask for its defaults)."""


class QuestionCancelledError(ParleyAPIError):
    """The question was cancelled before anyone answered."""


class QuestionTimeoutError(ParleyAPIError):
    """`timeout` passed and the question is still waiting; it stays open (wait on its id again)."""


class Parley:
    """A client of one Parley server, with one bearer token."""

    def __init__(self, base_url: str, token: str, *, http: httpx.Client | None = None) -> None:
        self._http = http or httpx.Client(
            base_url=base_url.rstrip("/"), timeout=httpx.Timeout(10.0, read=MAX_POLL + 15)
        )
        self._http.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Parley:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        resp = self._http.request(method, f"/api/v1{path}", **kwargs)
        if resp.status_code >= 400:
            try:
                problem = resp.json()
            except ValueError:
                problem = {"detail": resp.text}
            raise ParleyAPIError(resp.status_code, problem)
        body: dict[str, Any] = resp.json()
        return body

    def submit(
        self,
        request: Request | dict[str, Any],
        *,
        channel: str | None = None,
        user: str | None = None,
        thread_ts: str | None = None,
        callback_url: str | None = None,
        metadata: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        temporal: dict[str, str] | None = None,
        quorum: int | None = None,
    ) -> str:
        """Post the question (in `channel`, or a DM with `user`) and return its id without waiting.

        `temporal`: a workflow to signal when it ends (`workflow_id`, `namespace`, `key`), instead of a webhook.
        `quorum`: ask each of the request's assignees separately; answered when this many answered."""
        body: dict[str, Any] = {
            "request": request.model_dump(mode="json") if isinstance(request, Request) else request,
            "channel": channel,
            "user": user,
            "thread_ts": thread_ts,
            "callback_url": callback_url,
            "metadata": metadata or {},
            "context": context,
            "temporal": temporal,
            "quorum": quorum,
        }
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        created = self._call(
            "POST", "/questions", json={k: v for k, v in body.items() if v is not None}, headers=headers
        )
        return str(created["id"])

    def get(self, question_id: str, *, reveal_secrets: bool = False) -> dict[str, Any]:
        """The question. `reveal_secrets`: with its secret answers in the clear, which only the token that
        asked may read, and only once (`?reveal=secrets`); a second read raises `ParleyAPIError` 410."""
        return self._call("GET", f"/questions/{question_id}", params=_reveal(reveal_secrets))

    def wait(
        self, question_id: str, timeout: float | None = None, *, reveal_secrets: bool = False
    ) -> dict[str, AnswerValue]:
        """The answers once the question is answered (or expired with its defaults).

        Raises `QuestionExpiredError`, `QuestionCancelledError`, or `QuestionTimeoutError` after `timeout`
        seconds (None: wait as long as it takes). `reveal_secrets`: secret answers in the clear
        (see `get`), else they read `••••`.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = MAX_POLL if deadline is None else max(0, min(MAX_POLL, int(deadline - time.monotonic())))
            params = {"wait": left, **_reveal(reveal_secrets)}
            question = self._call("GET", f"/questions/{question_id}", params=params)
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

    def ask(
        self,
        request: Request | dict[str, Any],
        *,
        channel: str | None = None,
        user: str | None = None,
        timeout: float | None = None,
        reveal_secrets: bool = False,
        **fields: Any,
    ) -> dict[str, AnswerValue]:
        """Post the question and wait for its answers (see `submit` and `wait`)."""
        qid = self.submit(request, channel=channel, user=user, **fields)
        return self.wait(qid, timeout, reveal_secrets=reveal_secrets)

    def approve(
        self,
        action: str,
        args: dict[str, Any],
        *,
        channel: str,
        schema: dict[str, Any] | None = None,
        editable: bool | list[str] = True,
        assignees: list[str] | None = None,
        expires_in: int | None = None,
        callback_url: str | None = None,
        timeout: float | None = None,
        idempotency_key: str | None = None,
    ) -> Decision:
        """Ask to approve `action` with `args` (`POST /api/v1/approvals`) and wait for the decision.

        The approver may edit the editable args first: `Decision.args` is what was approved, and
        `changes` lists each edit. Raises as `wait` does.
        """
        body: dict[str, Any] = {
            "channel": channel,
            "action": action,
            "args": args,
            "schema": schema,
            "editable": editable,
            "assignees": assignees,
            "expires_in": expires_in,
            "callback_url": callback_url,
        }
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        created = self._call(
            "POST", "/approvals", json={k: v for k, v in body.items() if v is not None}, headers=headers
        )
        qid = str(created["id"])
        self.wait(qid, timeout)
        return Decision.model_validate(self.get(qid)["decision"])

    def submit_approval(self, body: dict[str, Any], *, idempotency_key: str | None = None) -> str:
        """Post an approval (`POST /api/v1/approvals`, `body` as that takes it) and return its id without waiting."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        created = self._call(
            "POST", "/approvals", json={k: v for k, v in body.items() if v is not None}, headers=headers
        )
        return str(created["id"])

    def cancel(self, question_id: str) -> dict[str, Any]:
        return self._call("POST", f"/questions/{question_id}/cancel")

    def confirm(self, question_id: str, context: dict[str, Any] | None) -> dict[str, Any]:
        """200 when `context` is still the facts the question was asked on; `ParleyAPIError` 409 listing changes."""
        return self._call("POST", f"/questions/{question_id}/confirm", json={"context": context})


def _reveal(reveal_secrets: bool) -> dict[str, str]:
    return {"reveal": "secrets"} if reveal_secrets else {}
