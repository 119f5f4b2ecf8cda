"""Errors raised by the interaction port; every one derives from `InteractionError`."""

from __future__ import annotations


class InteractionError(Exception):
    """Base of every error the port raises."""


class AnswerError(InteractionError):
    """Answers that do not fit their request; `.errors` maps each item id to its problem.

    With `labels` (item id to the label people read), the message names each item by its label:
    "Replicas: at most 10".
    """

    def __init__(self, errors: dict[str, str], labels: dict[str, str] | None = None) -> None:
        self.errors = dict(errors)
        self.labels = dict(labels or {})
        detail = "; ".join(f"{self.labels.get(k, k)}: {v}" for k, v in self.errors.items())
        super().__init__(f"invalid answers: {detail}")

    def worded(self) -> dict[str, str]:
        """Each refused item's problem, led by its label: {"replicas": "Replicas: at most 10"}."""
        return {k: f"{self.labels.get(k, k)}: {v}" for k, v in self.errors.items()}


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
