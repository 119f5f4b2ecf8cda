"""Forms from pydantic models: `run.ask_form(Model)` asks one item per field and returns a `Model`.

The request names its model (`module:QualName`), so wherever answers are accepted the model's own
validators run on them too and their errors are the form's errors: nothing is accepted while the
model refuses it. The model is looked up only among the models already defined (by the agents a
process loaded), never imported on a request's word.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from workers.interaction.exceptions import AnswerError
from workers.interaction.models import MAX_ITEMS, Answer, AnswerValue, Item, Request, answers_to_values
from workers.interaction.schema_items import FormError, schema_items

M = TypeVar("M", bound=BaseModel)


def model_name(model: type[BaseModel]) -> str:
    """How a request names `model`: `module:QualName`."""
    return f"{model.__module__}:{model.__qualname__}"


def loaded_model(name: str) -> type[BaseModel] | None:
    """The model a request names, among the pydantic models defined in this process; else None."""
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


def form_items(model: type[BaseModel]) -> list[Item]:
    """One item per field of `model`, or `FormError` naming the first field no item can ask for."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise FormError(f"ask_form takes a pydantic model class, not {model!r}")
    try:
        items = schema_items(model.model_json_schema())
    except ValidationError as exc:
        raise FormError(f"{model.__name__}: a field cannot be asked: {exc.errors()[0]['msg']}") from exc
    for name in model.model_fields:
        if items.get(name) is None:
            annotation = model.model_fields[name].annotation
            raise FormError(
                f"{model.__name__}.{name}: a field of type {annotation!r} cannot be asked in a form "
                "(use a choice, number, yes/no, text, date or time, email, URL or secret)"
            )
    if len(items) > MAX_ITEMS:
        raise FormError(f"{model.__name__} has {len(items)} fields; a form asks at most {MAX_ITEMS}")
    return [i for i in items.values() if i is not None]


def _instance(model: type[M], values: dict[str, AnswerValue]) -> M:
    return model.model_validate({k: v for k, v in values.items() if v is not None})


def check_form(request: Request, answers: list[Answer]) -> None:
    """Run the model a request names on its answers; `AnswerError` with each error by item id."""
    model = loaded_model(request.form) if request.form else None
    if model is None:
        return
    try:
        _instance(model, answers_to_values(request, answers))
    except ValidationError as exc:
        errors: dict[str, str] = {}
        first = request.items[0].id
        for error in exc.errors():
            loc = error.get("loc") or ()
            field = str(loc[0]) if loc and request.item(str(loc[0])) is not None else first
            message = str(error.get("msg", "not valid")).removeprefix("Value error, ")
            errors.setdefault(field, message)
        raise AnswerError(errors) from exc


def form_request(model: type[BaseModel], reason: str, **options: Any) -> Request:
    """The request `ask_form` puts: `model`'s fields as items, the model named for validation."""
    return Request.model_validate({"reason": reason, **options, "items": form_items(model), "form": model_name(model)})


def form_result(model: type[M], values: dict[str, AnswerValue]) -> M:
    """The answers as an instance of `model`, or `FormError` when the model refuses them."""
    try:
        return _instance(model, values)
    except ValidationError as exc:
        raise FormError(f"{model.__name__} refused the answers: {exc}") from exc
