"""The check a form's own model makes of its answers, wherever they are accepted.

A request names its model (`module:QualName`). The model is looked up only among those already
defined. It is never imported on a request's word. Request validation calls this without
`forms`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from workers.interaction.answers import Answer, AnswerValue, answers_to_values
from workers.interaction.exceptions import AnswerError

if TYPE_CHECKING:
    from workers.interaction.models import Request

M = TypeVar("M", bound=BaseModel)


def model_name(model: type[BaseModel]) -> str:
    """How a request names `model`: `module:QualName`."""
    return f"{model.__module__}:{model.__qualname__}"


def loaded_model(name: str) -> type[BaseModel] | None:
    """The pydantic model a request names, if this process defines it."""
    seen: set[type[BaseModel]] = set()
    todo: list[type[BaseModel]] = [BaseModel]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        if model_name(cls) == name:
            return cls
        todo.extend(cls.__subclasses__())
    return None


def model_instance(model: type[M], values: dict[str, AnswerValue]) -> M:
    """`model` built from the given values, with defaults for unanswered items."""
    return model.model_validate({k: v for k, v in values.items() if v is not None})


def check_form(request: Request, answers: list[Answer]) -> None:
    """Run the request's model on its answers.

    Raises `AnswerError` with each error by item id.
    """
    model = loaded_model(request.form) if request.form else None
    if model is None:
        return
    try:
        model_instance(model, answers_to_values(request, answers))
    except ValidationError as exc:
        errors: dict[str, str] = {}
        first = request.items[0].id
        for error in exc.errors():
            loc = error.get("loc") or ()
            field = str(loc[0]) if loc and request.item(str(loc[0])) is not None else first
            message = str(error.get("msg", "not valid")).removeprefix("Value error, ")
            errors.setdefault(field, message)
        raise AnswerError(errors) from exc
