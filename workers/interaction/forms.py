"""Forms from pydantic models: `run.ask_form(Model)` asks per field, returns a `Model`.

The request names its model (`module:QualName`). Wherever answers are accepted, the model's own
validators run on them too. Their errors are the form's errors, so nothing the model refuses is
accepted. The model is looked up only among those already defined by loaded agents. It is never
imported on a request's word.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from workers.interaction.form_check import M, model_instance, model_name
from workers.interaction.form_check import check_form as check_form
from workers.interaction.form_check import loaded_model as loaded_model
from workers.interaction.models import MAX_ITEMS, AnswerValue, Item, Request
from workers.interaction.schema_items import FormError, schema_items


def form_items(model: type[BaseModel]) -> list[Item]:
    """One item per field of `model`.

    `FormError` names the first field no item can ask for.
    """
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


def form_request(model: type[BaseModel], reason: str, **options: Any) -> Request:
    """The request `ask_form` puts: one item per field, the model named."""
    return Request.model_validate({"reason": reason, **options, "items": form_items(model), "form": model_name(model)})


def form_result(model: type[M], values: dict[str, AnswerValue]) -> M:
    """The answers as an instance of `model`, or `FormError` if it refuses them."""
    try:
        return model_instance(model, values)
    except ValidationError as exc:
        raise FormError(f"{model.__name__} refused the answers: {exc}") from exc
