"""Errors raised by the interaction port; every one derives from `InteractionError`."""

from __future__ import annotations


class InteractionError(Exception):
    """Base of every error the port raises."""


class AnswerError(InteractionError):
    """Answers that do not fit their request; `.errors` maps each item id to its problem."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = dict(errors)
        detail = "; ".join(f"{k}: {v}" for k, v in self.errors.items())
        super().__init__(f"invalid answers: {detail}")


class ChoiceError(InteractionError):
    """A typed reply that names no option, or more than one."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        self.candidates = candidates
        super().__init__(message)


class ContextError(InteractionError):
    """A context `run.ask` cannot bind an answer to: not a JSON object, or too long; nothing was recorded."""


class QuestionExpired(InteractionError):
    """Raised by `run.ask` when nobody answered in time and the request says `on_expiry="fail"`."""

    def __init__(self, key: str, expired_at: float | None = None) -> None:
        self.key = key
        self.expired_at = expired_at
        super().__init__(f"question {key!r} expired without an answer")
