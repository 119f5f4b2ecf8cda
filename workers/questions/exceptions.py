"""Errors of the question service, each mapped to one HTTP status in the API."""

from __future__ import annotations

import math
from typing import Any

from workers.exceptions import ParleyError


class QuestionError(ParleyError):
    """Base of the question service's refusals; nothing was written."""

    status = 400
    title = "Bad request"

    def __init__(self, detail: str, **extra: Any) -> None:
        self.detail = detail
        self.extra = extra
        self.headers: dict[str, str] = {}
        super().__init__(detail)


class QuestionNotFound(QuestionError):
    """No such question, or one the caller may not see.

    Another token's question reads the same.
    """

    status = 404
    title = "Not found"


class QuestionForbidden(QuestionError):
    """The caller may not do this, as with a Temporal workflow not granted."""

    status = 403
    title = "Forbidden"


class QuestionInvalid(QuestionError):
    """The body does not describe a question Parley can ask.

    `errors` lists each problem.
    """

    status = 422
    title = "Invalid question"

    def __init__(self, detail: str, errors: list[dict[str, Any]] | None = None, *, title: str | None = None) -> None:
        super().__init__(detail, errors=errors or [{"loc": [], "msg": detail, "type": "value_error"}])
        if title is not None:  # what was wrong, when it was not the question itself (a query parameter, say)
            self.title = title


class QuestionConflict(QuestionError):
    """The request contradicts what exists.

    Examples are a reused Idempotency-Key, a closed question, changed facts.
    """

    status = 409
    title = "Conflict"


class QuestionGone(QuestionError):
    """What was asked for existed once but is no longer kept.

    An example is a question's secret answers, already read once.
    """

    status = 410
    title = "Gone"


class SecretsUnavailable(QuestionError):
    """This process cannot open the question's secret answers.

    `PARLEY_SECRET_KEY` is unset, or lacks the key that sealed them. Nothing was read or deleted.
    Another process can open them, or this one once fixed.
    """

    status = 503
    title = "Service unavailable"


class QuestionRateLimited(QuestionError):
    """The token is over its rate limit, and `Retry-After` says when.

    Each DM a question sends counts as a request.
    """

    status = 429
    title = "Too many requests"

    def __init__(self, detail: str, retry_after: float) -> None:
        super().__init__(detail)
        self.headers = {"Retry-After": str(max(1, math.ceil(retry_after)))}


class TooManyOpenQuestions(QuestionError):
    """The caller has as many questions open as it may (`PARLEY_API_OPEN_QUESTIONS`).

    A question closes when it is answered, cancelled or expires. There is no Retry-After: when
    depends on people.
    """

    status = 429
    title = "Too many open questions"


class QuestionNotPosted(QuestionError):
    """The question was created, but Redis failed before it was posted.

    A worker posts it once Redis is back. The answer is 503 with Retry-After. A retry with the same
    Idempotency-Key returns this question.
    """

    status = 503
    title = "Service unavailable"

    def __init__(self, question_id: str, keyed: bool) -> None:
        again = "a retry with the same Idempotency-Key returns it" if keyed else "read it by its id"
        super().__init__(
            f"question {question_id} was created but could not be posted yet; "
            f"it is posted once Parley's storage is back, and {again}",
            question_id=question_id,
        )
