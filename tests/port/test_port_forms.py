"""The port's forms and approvals: pydantic fields and JSON Schema as items, and decisions read back."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Literal

import pytest
from pydantic import AnyHttpUrl, BaseModel, Field, SecretStr

from workers.interaction import Answer, AnswerError, FormError, ItemType, Request, answers_to_values
from workers.interaction.approval import APPROVE, DECISION_ID, approval_answers, approval_request, decision_of
from workers.interaction.forms import form_items, form_request
from workers.interaction.schema_items import schema_items, schema_of

pytestmark = pytest.mark.unit


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Everything(BaseModel):
    pick: Literal["a", "b"]
    color: Color = Field(title="Colour")
    tags: list[Literal["x", "y"]] = []
    shades: set[Color] = set()
    count: int = Field(ge=1, le=10)
    ratio: float = 0.5
    ok: bool
    day: dt.date
    at: dt.time
    when: dt.datetime
    site: AnyHttpUrl
    max_replicas: str = Field(min_length=2, max_length=20, pattern=r"^\w+$", description="a word")
    body: str = Field(json_schema_extra={"multiline": True})
    token: SecretStr
    maybe: int | None = None


def test_every_field_type_of_the_table_becomes_its_item() -> None:
    found = schema_items(schema_of(Everything))
    items = {name: item for name, item in found.items() if item is not None}
    kinds = {name: item.type for name, item in items.items()}
    assert kinds == {
        "pick": ItemType.SELECT,
        "color": ItemType.SELECT,
        "tags": ItemType.MULTI_SELECT,
        "shades": ItemType.MULTI_SELECT,
        "count": ItemType.NUMBER,
        "ratio": ItemType.NUMBER,
        "ok": ItemType.BOOLEAN,
        "day": ItemType.DATE,
        "at": ItemType.TIME,
        "when": ItemType.DATETIME,
        "site": ItemType.URL,
        "max_replicas": ItemType.FREE_TEXT,
        "body": ItemType.FREE_TEXT,
        "token": ItemType.SECRET,
        "maybe": ItemType.NUMBER,
    }
    assert items["color"].text == "Colour" and items["color"].option_values() == ["red", "blue"]
    assert (items["count"].integer, items["count"].min, items["count"].max) == (True, 1, 10)
    assert (items["ratio"].integer, items["ratio"].default, items["ratio"].required) == (False, 0.5, False)
    text = items["max_replicas"]
    assert (text.text, text.min_length, text.max_length, text.pattern) == ("Max Replicas", 2, 20, r"^\w+$")
    assert text.placeholder == "a word" and items["body"].multiline
    assert items["maybe"].required is False and items["pick"].required is True
    with pytest.raises(FormError, match="Everything has 15 fields; a form asks at most 10"):
        form_items(Everything)


@pytest.mark.parametrize(
    ("annotation", "field"),
    [(dict[str, int], "extra"), (Color | int, "extra"), (list[int], "extra")],
)
def test_a_field_no_item_fits_is_refused_naming_it(annotation: object, field: str) -> None:
    class Nested(BaseModel):
        x: int

    fields = {"name": str, field: annotation}
    model = type("Odd", (BaseModel,), {"__annotations__": fields})
    with pytest.raises(FormError, match=r"Odd\.extra: a field of type"):
        form_request(model, "asked")

    class WithNested(BaseModel):
        inner: Nested

    with pytest.raises(FormError, match=r"WithNested\.inner"):
        form_items(WithNested)


def test_an_approvals_items_are_inferred_from_its_args_and_others_are_shown_only() -> None:
    args = {"service": "api", "replicas": 3, "ratio": 0.5, "dry_run": False, "hosts": ["a"]}
    request = approval_request("Deploy api", args)
    assert request.approval is not None and request.approval.editable == ["service", "replicas", "ratio", "dry_run"]
    kinds = [(i.id, i.type, i.default) for i in request.items]
    assert kinds[:4] == [
        ("service", ItemType.FREE_TEXT, "api"),
        ("replicas", ItemType.NUMBER, 3),
        ("ratio", ItemType.NUMBER, 0.5),
        ("dry_run", ItemType.BOOLEAN, False),
    ]
    only = approval_request("Deploy api", args, editable=["replicas"])
    assert only.approval is not None and only.approval.editable == ["replicas"]
    with pytest.raises(FormError, match="not among the args"):
        approval_request("Deploy api", args, editable=["nope"])


def test_a_decision_lists_the_edits_and_an_untouched_approval_lists_none() -> None:
    request = approval_request("Deploy api", {"service": "api", "replicas": 3})
    replicas = request.item("replicas")
    assert replicas is not None
    edited = approval_answers(request, [Answer.for_item(replicas, 2)], approve=True)
    decision = decision_of(request, answers_to_values(request, request.validate_answers(edited)), "U1")
    assert (decision.approved, decision.args, decision.edited) == (True, {"service": "api", "replicas": 2}, True)
    assert (decision.changes, decision.by) == ([("replicas", 3, 2)], "U1")
    plain = approval_answers(request, [], approve=True)
    assert next(a.choice for a in plain if a.id == DECISION_ID) == APPROVE
    assert decision_of(request, answers_to_values(request, plain)).edited is False
    rejected = approval_answers(request, [Answer.for_item(replicas, 1)], approve=False, reason="not today")
    no = decision_of(request, answers_to_values(request, rejected))
    assert (no.approved, no.args["replicas"], no.reason, no.changes) == (False, 3, "not today", [])


def test_a_schema_types_the_editable_args_and_bounds_them() -> None:
    schema = {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1, "maximum": 3}}}
    request = approval_request("Deploy", {"replicas": 3, "service": "api"}, schema=schema, editable=["replicas"])
    replicas = request.item("replicas")
    assert replicas is not None and (replicas.min, replicas.max, replicas.integer) == (1, 3, True)
    too_many = approval_answers(request, [Answer.for_item(replicas.model_copy(update={"max": None}), 5)], approve=True)
    with pytest.raises(AnswerError, match="Replicas: at most 3"):
        request.validate_answers(too_many)


def test_a_pydantic_model_types_an_approvals_args_and_a_request_holds_a_consistent_approval() -> None:
    class Scale(BaseModel):
        replicas: int = Field(ge=1, le=5)
        mode: Literal["rolling", "blue-green"]

    request = approval_request("Scale api", {"replicas": 3, "mode": "rolling", "note": "x"}, schema=Scale)
    kinds = {i.id: i.type for i in request.items}
    assert kinds == {
        "replicas": ItemType.NUMBER,
        "mode": ItemType.SELECT,
        "note": ItemType.FREE_TEXT,
        "_decision": ItemType.SELECT,
        "_reason": ItemType.FREE_TEXT,
    }
    assert request.item("replicas") is not None and request.item("replicas").max == 5  # type: ignore[union-attr]
    stored = request.model_dump(mode="json")
    with pytest.raises(ValueError, match="editable \\['ghost'\\] must each be an argument with an item"):
        Request.model_validate({**stored, "approval": {**stored["approval"], "editable": ["ghost"]}})
    with pytest.raises(ValueError, match='needs the "_decision" select'):
        Request.model_validate({**stored, "items": stored["items"][:2]})
