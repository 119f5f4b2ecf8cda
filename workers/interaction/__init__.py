"""The interaction port: host-neutral types for asking people typed questions.

Agents depend on this package and nothing else of Parley's hosts. It imports only
the standard library and pydantic.
"""

from workers.interaction.choice import resolve_choice
from workers.interaction.exceptions import AnswerError, ChoiceError, InteractionError, QuestionExpired
from workers.interaction.models import (
    Answer,
    AnswerValue,
    Item,
    ItemType,
    OnExpiry,
    Option,
    Outcome,
    Request,
    answers_to_values,
)
from workers.interaction.protocol import Interactor, RunView

__all__ = [
    "Answer",
    "AnswerError",
    "AnswerValue",
    "ChoiceError",
    "InteractionError",
    "Interactor",
    "Item",
    "ItemType",
    "OnExpiry",
    "Option",
    "Outcome",
    "QuestionExpired",
    "Request",
    "RunView",
    "answers_to_values",
    "resolve_choice",
]
