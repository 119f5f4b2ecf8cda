"""What a person answers: a value per item, in its type's field.

The port's lowest models. Validation builds answers from them without the request models.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, model_validator

if TYPE_CHECKING:
    from workers.interaction.models import Item, Request

ITEM_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
SECRET_MASK = "••••"
"""What every surface shows, and what the store keeps in a question's answers, for a secret's value."""
AnswerValue = str | bool | int | float | list[str] | None
"""What `run.ask` returns per item: a choice, a list of choices, text, a date or time, a number, a yes/no
(True/False), or None."""


class _Strict(BaseModel):
    """Base for every port model: unknown fields are refused, values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ItemType(StrEnum):
    """The kinds of question a person can be asked.

    `SECRET` is a value never to be seen again, like a one-time code or token. Hosts read it without
    showing it. Only the run gets it back. Everything else shows `SECRET_MASK`.
    """

    SELECT = "select"
    MULTI_SELECT = "multi_select"
    FREE_TEXT = "free_text"
    DATE = "date"
    SECRET = "secret"
    NUMBER = "number"
    BOOLEAN = "boolean"
    EMAIL = "email"
    URL = "url"
    TIME = "time"
    DATETIME = "datetime"


ItemTypeName = Literal[
    "select", "multi_select", "free_text", "date", "secret", "number", "boolean", "email", "url", "time", "datetime"
]
"""An `ItemType` by its value, as agents may write it: `type="select"`."""


_ANSWER_FIELDS = (
    "choice",
    "choices",
    "free_text",
    "date",
    "secret",
    "number",
    "boolean",
    "email",
    "url",
    "time",
    "datetime",
)


class Answer(_Strict):
    """A person's answer to one item: its id and its type's one field."""

    id: Annotated[str, Field(pattern=ITEM_ID_PATTERN)]
    choice: str | None = None
    choices: list[str] | None = None
    free_text: str | None = None
    date: str | None = None
    secret: str | None = Field(default=None, repr=False)  # never in a repr, so never in a traceback or log
    number: StrictInt | StrictFloat | None = None
    boolean: StrictBool | None = None
    email: str | None = None
    url: str | None = None
    time: str | None = None
    """ "HH:MM", 24-hour."""
    datetime: str | None = None
    """ISO 8601 in UTC: "2026-12-04T17:30:00Z"."""

    @model_validator(mode="after")
    def _one_field(self) -> Answer:
        given = [f for f in _ANSWER_FIELDS if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError(f"answer {self.id!r} must set exactly one of {', '.join(_ANSWER_FIELDS)}")
        return self

    @property
    def field(self) -> str:
        return next(f for f in _ANSWER_FIELDS if getattr(self, f) is not None)

    @property
    def is_secret(self) -> bool:
        return self.secret is not None

    def masked(self) -> Answer:
        """This answer as it may be kept and shown, secrets masked."""
        return self.model_copy(update={"secret": SECRET_MASK}) if self.is_secret else self

    @property
    def value(self) -> AnswerValue:
        value: AnswerValue = getattr(self, self.field)
        return value

    @classmethod
    def for_item(cls, item: Item, value: AnswerValue) -> Answer:
        """The answer to `item`, with `value` in its type's field."""
        return cls.model_validate({"id": item.id, FIELD_FOR_TYPE[item.type]: value})


FIELD_FOR_TYPE: dict[ItemType, str] = {
    ItemType.SELECT: "choice",
    ItemType.MULTI_SELECT: "choices",
    ItemType.FREE_TEXT: "free_text",
    ItemType.DATE: "date",
    ItemType.SECRET: "secret",
    ItemType.NUMBER: "number",
    ItemType.BOOLEAN: "boolean",
    ItemType.EMAIL: "email",
    ItemType.URL: "url",
    ItemType.TIME: "time",
    ItemType.DATETIME: "datetime",
}


def answers_to_values(request: Request, answers: list[Answer]) -> dict[str, AnswerValue]:
    """Each item id mapped to its answer's value, or None if unanswered."""
    by_id = {a.id: a.value for a in answers}
    return {item.id: by_id.get(item.id) for item in request.items}
