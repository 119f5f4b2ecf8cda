"""Errors of the question service; each maps to one HTTP status in the API."""

from __future__ import annotations

from typing import Any

from workers.exceptions import ParleyError


class QuestionError(ParleyError):
    """Base of the question service's refusals; nothing was written."""

    status = 400
    title = "Bad request"

    def __init__(self, detail: str, **extra: Any) -> None:
        self.detail = detail
        self.extra = extra
        super().__init__(detail)


class QuestionNotFound(QuestionError):
    """No such question, or one the caller may not see (another token's reads the same)."""

    status = 404
    title = "Not found"


class QuestionInvalid(QuestionError):
    """The body does not describe a question Parley can ask; `errors` lists each problem."""

    status = 422
    title = "Invalid question"

    def __init__(self, detail: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail, errors=errors or [{"loc": [], "msg": detail, "type": "value_error"}])


class QuestionConflict(QuestionError):
    """The request contradicts what exists: a reused Idempotency-Key, a closed question, changed facts."""

    status = 409
    title = "Conflict"


class QuestionNotPosted(QuestionError):
    """The question was created but Redis failed before it was posted: a worker posts it once Redis is back.

    Answered 503 with Retry-After; a retry with the same Idempotency-Key returns this question.
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
