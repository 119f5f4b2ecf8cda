"""Edit-and-approve: a person approves, edits or rejects an action and its arguments.

An approval is an ordinary `Request` carrying an `Approval`: the action and its proposed args.
It has one item per editable argument, pre-filled with the proposed value. The decision and an
optional reason follow. Every host answers it like any other request. A host that knows
approvals shows the arguments with Approve, Edit… and Reject. `decision_of` reads the answers
back as a `Decision`, with the edits applied and listed.

Arguments too long to bind whole may be shown in part (`in_part`, see `approval_in_part`). Each
long value is then shown by its start and bound by its sha256. The caller keeps the whole
arguments and runs with `approved_args`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from workers.interaction.approval_in_part import approved_args as approved_args
from workers.interaction.approval_in_part import bound_args
from workers.interaction.approval_in_part import shown_in_part as shown_in_part
from workers.interaction.lengths import REASON_MAX
from workers.interaction.models import (
    ITEM_ID_PATTERN,
    MAX_ITEMS,
    Answer,
    AnswerValue,
    Approval,
    Item,
    ItemType,
    Option,
    Request,
)
from workers.interaction.schema_items import FormError, readable, schema_items, schema_of

DECISION_ID = "_decision"
"""The item carrying the decision: `APPROVE` or `REJECT`."""
REASON_ID = "_reason"
"""The optional reason, asked when rejecting."""
APPROVE, REJECT = "approve", "reject"
APPROVE_STANDING = "approve_standing"
"""Approve this call and, for a while, later calls like it (the approval's `standing` says for what)."""
MAX_EDITABLE = MAX_ITEMS - 2
"""Arguments that can be edited in one approval: the request's items less the decision and the reason."""


class Decision(BaseModel):
    """A person's decision on an approval: the approved args and what was edited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    approved: bool
    args: dict[str, Any]
    edited: bool = False
    changes: list[tuple[str, Any, Any]] = []
    """One `(field, old, new)` per edited argument."""
    reason: str | None = None
    by: str = ""
    standing: bool = False
    """Approved as a standing approval: later calls like this one go without asking, for a while."""


def _inferred(name: str, value: Any) -> Item | None:
    """The item for an argument without a schema, inferred from its value.

    None when the value is not editable.
    """
    label = readable(name)
    if isinstance(value, bool):
        return Item(id=name, text=label, type=ItemType.BOOLEAN, default=value)
    if isinstance(value, int):
        return Item(id=name, text=label, type=ItemType.NUMBER, integer=True, default=value)
    if isinstance(value, float):
        return Item(id=name, text=label, type=ItemType.NUMBER, default=value)
    if isinstance(value, str) and len(value) > 0:
        return Item(id=name, text=label, type=ItemType.FREE_TEXT, default=value, multiline="\n" in value)
    return None


def _prefilled(item: Item, proposed: Any) -> Item:
    """`item` pre-filled with the proposed value, required unless that value is empty.

    An empty proposal (`""`, `[]`, `None`) reads as no answer. Requiring one would make Approve
    fail. Left empty, the argument is approved exactly as proposed.
    """
    empty = proposed is None or proposed == [] or (isinstance(proposed, str) and proposed.strip() == "")
    return item.model_validate({**item.model_dump(), "default": proposed, "required": not empty})


def _editable_names(args: dict[str, Any], editable: bool | list[str]) -> list[str]:
    if editable is True:
        return list(args)
    if editable is False:
        return []
    unknown = [n for n in editable if n not in args]
    if unknown:
        raise FormError(f"editable names {unknown} are not among the args ({', '.join(args)})")
    return [n for n in args if n in editable]


def approval_request(
    action: str,
    args: dict[str, Any],
    *,
    schema: dict[str, Any] | type[BaseModel] | None = None,
    editable: bool | list[str] = True,
    standing: str | None = None,
    input_schema: dict[str, Any] | None = None,
    fixed: Collection[str] = (),
    in_part: bool = False,
    **options: Any,
) -> Request:
    """The request asking to approve `action` with `args`.

    Arguments no item fits are shown but not editable. So are those in `fixed`.
    - `editable=True`: the first `MAX_EDITABLE` arguments in order are editable. People expect
      Edit… to change a tool's arguments, so most stay editable. A tool most often puts first what
      matters.
    - `editable` as names: naming more than `MAX_EDITABLE` is a `FormError`.
    - `standing`: the label of a third choice, a standing approval (`APPROVE_STANDING`).
    - `input_schema`: what edits must meet when answered. It defaults to `schema`'s.
    - `in_part`: args too long to bind whole are shown in part (`shown_in_part`). Those are never
      editable. The caller runs with `approved_args`.
    """
    shown, clipped = bound_args(args, in_part)  # plain JSON of bounded size, or ContextError: bound to it
    if input_schema is None and schema is not None:
        input_schema = schema_of(schema)
    typed = schema_items(schema_of(schema), only=list(args)) if schema is not None else {}
    items: list[Item] = []
    for name in _editable_names(args, editable):
        if not re.fullmatch(ITEM_ID_PATTERN, name) or name in (DECISION_ID, REASON_ID, *fixed, *clipped):
            continue
        try:
            item = typed.get(name) if name in typed else _inferred(name, args[name])
            if item is not None:
                item = _prefilled(item, args[name])
        except ValidationError:
            item = None  # the proposed value is not an answer this item takes: shown, not editable
        if item is not None:
            items.append(item)
    if len(items) > MAX_EDITABLE:
        if editable is not True:
            raise FormError(f"at most {MAX_EDITABLE} arguments can be editable; {len(items)} are named")
        items = items[:MAX_EDITABLE]
    decision = Item(
        id=DECISION_ID,
        text="Decision",
        type=ItemType.SELECT,
        options=[
            Option(value=APPROVE, label="Approve"),
            *([Option(value=APPROVE_STANDING, label=standing)] if standing else []),
            Option(value=REJECT, label="Reject"),
        ],
    )
    reason = Item(id=REASON_ID, text="Reason", type=ItemType.FREE_TEXT, required=False)
    approval = Approval(
        action=action, args=shown, editable=[i.id for i in items], standing=standing, input_schema=input_schema
    )
    return Request.model_validate(
        {"reason": options.pop("reason", None) or action[:REASON_MAX], **options}
        | {"items": [*items, decision, reason], "approval": approval}
    )


def approval_answers(
    request: Request, given: list[Answer], *, approve: bool, reason: str | None = None, standing: bool = False
) -> list[Answer]:
    """The full answers to an approval: edits, other proposed values, the decision.

    `given` holds the edits. Every other argument keeps its proposed value.
    `standing`: approved as a standing approval, which the request must offer (`approval.standing`).
    """
    by_id = {a.id: a for a in given if a.id not in (DECISION_ID, REASON_ID)}
    out: list[Answer] = []
    for item in request.items:
        if item.id == DECISION_ID:
            chosen = (APPROVE_STANDING if standing else APPROVE) if approve else REJECT
            out.append(Answer(id=DECISION_ID, choice=chosen))
        elif item.id == REASON_ID:
            if reason and reason.strip():
                out.append(Answer(id=REASON_ID, free_text=reason))
        elif item.id in by_id and approve:
            out.append(by_id[item.id])
        elif item.default is not None:
            out.append(Answer.for_item(item, item.default))
    return out


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def decision_of(request: Request, values: dict[str, AnswerValue], by: str = "") -> Decision:
    """`values` (an approval's answers by item id) as the `Decision` they make."""
    approval = request.approval
    if approval is None:
        raise FormError("this request is not an approval")
    approved = values.get(DECISION_ID) in (APPROVE, APPROVE_STANDING)
    args = dict(approval.args)
    changes: list[tuple[str, Any, Any]] = []
    if approved:
        for name in approval.editable:
            new = values.get(name)
            if new is not None and not _same(new, args.get(name)):
                changes.append((name, args.get(name), new))
                args[name] = new
    reason = values.get(REASON_ID)
    return Decision(
        approved=approved,
        args=args,
        edited=bool(changes),
        changes=changes,
        reason=reason if isinstance(reason, str) and reason.strip() else None,
        by=by,
        standing=values.get(DECISION_ID) == APPROVE_STANDING,
    )
