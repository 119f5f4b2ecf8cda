"""The interaction port: host-neutral types for asking people typed questions.

Agents depend on this package and nothing else of Parley's hosts. It imports only
the standard library and pydantic.
"""

from typing import Any

from workers.interaction.approval import Decision
from workers.interaction.choice import reply_answers, reply_item, resolve_choice
from workers.interaction.context import CONTEXT_MAX, ChangeKind, Context, ContextChange
from workers.interaction.exceptions import (
    AnswerError,
    ChoiceError,
    ContextError,
    InteractionError,
    QuestionExpired,
)
from workers.interaction.models import (
    SECRET_MASK,
    Answer,
    AnswerValue,
    Approval,
    Item,
    ItemType,
    OnExpiry,
    Option,
    Outcome,
    Request,
    answers_to_values,
)
from workers.interaction.protocol import AskingRun, Interactor, PausingRun
from workers.interaction.renamed import renamed
from workers.interaction.schema_items import FormError
from workers.interaction.views import GroupInfo, QuestionInfo, QuestionProgress, QuestionState, RunInfo

__all__ = [
    "CONTEXT_MAX",
    "SECRET_MASK",
    "Answer",
    "AnswerError",
    "AnswerValue",
    "Approval",
    "AskingRun",
    "ChangeKind",
    "ChoiceError",
    "Context",
    "ContextChange",
    "ContextError",
    "Decision",
    "FormError",
    "GroupInfo",
    "InteractionError",
    "Interactor",
    "Item",
    "ItemType",
    "OnExpiry",
    "Option",
    "Outcome",
    "PausingRun",
    "QuestionExpired",
    "QuestionInfo",
    "QuestionProgress",
    "QuestionState",
    "Request",
    "RunInfo",
    "answers_to_values",
    "reply_answers",
    "reply_item",
    "resolve_choice",
]


_RENAMED = {"RunView": "AskingRun"}  # deprecated name -> its new name


def __getattr__(name: str) -> Any:
    """An old name, importable for a while with a DeprecationWarning."""
    return renamed(__name__, name, _RENAMED, globals())
