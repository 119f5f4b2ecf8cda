"""`parley.client.Parley`: the HTTP API from Python, on httpx.

    from parley.client import Parley, QuestionExpiredError

    parley = Parley("https://parley.example.com", token=os.environ["PARLEY_TOKEN"])
    answers = parley.ask({"reason": "Deploy v1.4.2?", "items": [...]}, channel="C0GENERAL", timeout=3600)

`ask` posts the question and waits for it. `submit` only posts it and returns its id. `wait`
waits for a question posted earlier. Waiting is a series of long-polls
(`GET /api/v1/questions/{id}?wait=N`). Each returns as soon as the question closes.
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from parley._client_common import (
    MAX_POLL,
    TIMEOUT,
    Call,
    ParleyAPIError,
    QuestionCancelledError,
    QuestionExpiredError,
    QuestionTimeoutError,
    answers_of,
    approval_call,
    approve_call,
    deadline_of,
    poll_params,
    result,
    reveal,
    submit_call,
)
from parley.async_client import AsyncParley
from parley.client_receipts import RECEIPT_PAUSE, RECEIPT_TRIES, Decision, Outcome, closed, outcome_of
from workers.interaction import AnswerValue, Request

__all__ = [
    "MAX_POLL",
    "AsyncParley",
    "Decision",
    "Outcome",
    "Parley",
    "ParleyAPIError",
    "QuestionCancelledError",
    "QuestionExpiredError",
    "QuestionTimeoutError",
]


class Parley:
    """A client of one Parley server, with one bearer token.

    `AsyncParley` is its asyncio twin.
    """

    def __init__(self, base_url: str, token: str, *, http: httpx.Client | None = None) -> None:
        self._http = http or httpx.Client(base_url=base_url.rstrip("/"), timeout=TIMEOUT)
        self._http.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Parley:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return result(self._http.request(method, f"/api/v1{path}", **kwargs))

    def _send(self, call: Call) -> dict[str, Any]:
        method, path, kwargs = call
        return self._call(method, path, **kwargs)

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
        """Post the question and return its id without waiting.

        It goes in `channel`, or a DM with `user`. `temporal`: a workflow to signal when it ends,
        instead of a webhook. It names `workflow_id`, `namespace` and `key`. `quorum`: ask each of the
        request's assignees separately. The question is answered when this many answered.
        """
        call = submit_call(
            request,
            idempotency_key,
            channel=channel,
            user=user,
            thread_ts=thread_ts,
            callback_url=callback_url,
            metadata=metadata,
            context=context,
            temporal=temporal,
            quorum=quorum,
        )
        return str(self._send(call)["id"])

    def get(self, question_id: str, *, reveal_secrets: bool = False) -> dict[str, Any]:
        """The question.

        `reveal_secrets` shows its secret answers in the clear (`?reveal=secrets`). Only the asking
        token may read them, and only once. A second read raises `ParleyAPIError` 410.
        """
        return self._call("GET", f"/questions/{question_id}", params=reveal(reveal_secrets))

    def wait(
        self, question_id: str, timeout: float | None = None, *, reveal_secrets: bool = False
    ) -> dict[str, AnswerValue]:
        """The answers once the question is answered, or expired with its defaults.

        Raises `QuestionExpiredError` or `QuestionCancelledError`. Raises `QuestionTimeoutError` after
        `timeout` seconds, or waits as long as it takes with None. `reveal_secrets`: secret answers in
        the clear (see `get`). Otherwise they read `••••`.
        """
        deadline = deadline_of(timeout)
        while True:
            params = poll_params(deadline, reveal_secrets)
            answers = answers_of(self._call("GET", f"/questions/{question_id}", params=params), deadline)
            if answers is not None:
                return answers

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
        """Ask to approve `action` with `args` and wait for the decision.

        This uses `POST /api/v1/approvals`. The approver may edit the editable args first.
        `Decision.args` is what was approved, and `changes` lists each edit. Raises as `wait` does.
        """
        call = approve_call(
            action,
            args,
            channel=channel,
            schema=schema,
            editable=editable,
            assignees=assignees,
            expires_in=expires_in,
            callback_url=callback_url,
            idempotency_key=idempotency_key,
        )
        qid = str(self._send(call)["id"])
        self.wait(qid, timeout)
        decided = (self.get(qid))["decision"]
        return Decision.model_validate({**decided, "receipt": self.receipt(qid)})

    def receipt(self, question_id: str) -> dict[str, Any] | None:
        """The closed question's signed receipt (`GET /questions/{id}/receipt`).

        None where Parley signs none. It asks again for a few seconds while a worker writes it (409 with
        Retry-After).
        """
        for _ in range(RECEIPT_TRIES):
            try:
                return self._call("GET", f"/questions/{question_id}/receipt")
            except ParleyAPIError as exc:
                if exc.status == 404 and "no receipt" in str(exc.problem.get("detail", "")):
                    return None
                if exc.status != 409 or "being written" not in str(exc.problem.get("detail", "")):
                    raise
            time.sleep(RECEIPT_PAUSE)
        return None

    def outcome(self, question_id: str, timeout: float | None = None) -> Outcome:
        """How the question ended, whatever the way, with its receipt.

        While it is open, this waits as `wait` does.
        """
        deadline = deadline_of(timeout)
        while True:
            view = self._call("GET", f"/questions/{question_id}", params=poll_params(deadline, False))
            if closed(view):
                return outcome_of(view, self.receipt(question_id))
            answers_of(view, deadline)  # raises QuestionTimeoutError once the deadline passed

    def submit_approval(self, body: dict[str, Any], *, idempotency_key: str | None = None) -> str:
        """Post an approval and return its id without waiting.

        This uses `POST /api/v1/approvals`, with `body` as that takes it.
        """
        return str(self._send(approval_call(body, idempotency_key))["id"])

    def cancel(self, question_id: str) -> dict[str, Any]:
        return self._call("POST", f"/questions/{question_id}/cancel")

    def confirm(self, question_id: str, context: dict[str, Any] | None) -> dict[str, Any]:
        """200 when `context` still holds the facts the question was asked on.

        Otherwise `ParleyAPIError` 409 lists the changes.
        """
        return self._call("POST", f"/questions/{question_id}/confirm", json={"context": context})
