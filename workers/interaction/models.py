"""The typed vocabulary of a question: what agents ask, what people answer.

These models are the host-neutral contract between agents and hosts. Hosts are Slack, the
terminal, a playground. The models carry no behaviour that depends on a host. They round-trip
through JSON unchanged, so a paused run can be stored and replayed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

# Answers are defined in `answers` so validation need not import this module; re-exported here.
from workers.interaction.answers import FIELD_FOR_TYPE as FIELD_FOR_TYPE
from workers.interaction.answers import ITEM_ID_PATTERN as ITEM_ID_PATTERN
from workers.interaction.answers import SECRET_MASK as SECRET_MASK
from workers.interaction.answers import Answer as Answer
from workers.interaction.answers import AnswerValue as AnswerValue
from workers.interaction.answers import ItemType as ItemType
from workers.interaction.answers import ItemTypeName as ItemTypeName
from workers.interaction.answers import _Strict
from workers.interaction.answers import answers_to_values as answers_to_values
from workers.interaction.form_check import check_form
from workers.interaction.lengths import (
    LABEL_MAX,
    OPTION_DESCRIPTION_MAX,
    OPTION_TEXT_MAX,
    OPTION_VALUE_MAX,
    PLACEHOLDER_MAX,
    REASON_MAX,
    TEXT_INPUT_MAX,
    fits,
)
from workers.interaction.patterns import problem as pattern_problem
from workers.interaction.texts import must_show, none_if_blank
from workers.interaction.validation import check_value, normalise, number_problem, validate_answers

MAX_ITEMS = 10
MAX_OPTIONS = 100
OPTION_LABEL_MAX = OPTION_TEXT_MAX
FREE_TEXT_DEFAULT_MAX = TEXT_INPUT_MAX
DELAY_MAX = 90 * 86400
"""The longest `expires_in` and `escalate_after`, in seconds: 90 days."""
STORED = {"stored": True}
"""The validation context of a request read back from the store: limits added since it was written do
not make it unreadable (a question asked with a longer delay before `DELAY_MAX` still closes)."""
_DELAY = Field(gt=0, description="seconds, at most 90 days", json_schema_extra={"maximum": DELAY_MAX})


def _not_yes_no(value: Any) -> Any:
    """Refuse `true` or `false` where a count is due: pydantic would read them as 1 and 0."""
    if isinstance(value, bool):
        raise ValueError("a whole number is due here, not true or false")
    return value


COUNT = BeforeValidator(_not_yes_no)
"""For a field of seconds, characters or people: `"expires_in": true` is refused, not read as 1 s."""
LAST_CALL_DEFAULT = 15 * 60
"""The last call's lead, in seconds, for a question longer than `LAST_CALL_FROM` that names none."""
LAST_CALL_FROM = 3600
OTHER_SUFFIX = "__other"
"""The id suffix of a free-text item that follows a select and may stand in for its choice ("type your own")."""
ASSIGNEE_PATTERN = r"[A-Za-z0-9_.@-]{1,64}"
"""A person's id (Slack `U…`/`W…`, or any host's own), or a Slack user group id (`S…`)."""

PATTERN_MAX = 500
"""The longest `pattern` a free-text item may carry."""
PATTERN_HINT_MAX = 150


class OnExpiry(StrEnum):
    """What a run gets when nobody answers in time: failure or defaults."""

    FAIL = "fail"
    USE_DEFAULTS = "use_defaults"


class Option(_Strict):
    """One choice of a select: a stable `value` and the `label` people see."""

    value: Annotated[str, Field(min_length=1, max_length=OPTION_VALUE_MAX), AfterValidator(fits(OPTION_VALUE_MAX))]
    label: Annotated[
        str,
        Field(min_length=1, max_length=OPTION_TEXT_MAX),
        AfterValidator(fits(OPTION_TEXT_MAX)),
        AfterValidator(must_show),
    ]
    description: Annotated[
        str | None,
        Field(max_length=OPTION_DESCRIPTION_MAX),
        AfterValidator(fits(OPTION_DESCRIPTION_MAX)),
        AfterValidator(none_if_blank),
    ] = None

    @model_validator(mode="before")
    @classmethod
    def _from_bare_string(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"value": data, "label": data}
        return data


class Item(_Strict):
    """One question inside a request, with the control that fits its type."""

    id: Annotated[str, Field(pattern=ITEM_ID_PATTERN)]
    text: Annotated[
        str, Field(min_length=1, max_length=LABEL_MAX), AfterValidator(fits(LABEL_MAX)), AfterValidator(must_show)
    ]
    type: ItemType
    options: list[Option] | None = None
    required: bool = True
    default: AnswerValue = None
    multiline: bool = False
    max_length: Annotated[int | None, Field(ge=1, le=FREE_TEXT_DEFAULT_MAX), COUNT] = None
    placeholder: Annotated[
        str | None,
        Field(max_length=PLACEHOLDER_MAX),
        AfterValidator(fits(PLACEHOLDER_MAX)),
        AfterValidator(none_if_blank),
    ] = None
    min_length: Annotated[int | None, Field(ge=1, le=FREE_TEXT_DEFAULT_MAX), COUNT] = None
    pattern: Annotated[str | None, Field(min_length=1, max_length=PATTERN_MAX)] = None
    """A regular expression the whole free-text answer must match."""
    pattern_hint: Annotated[
        str | None,
        Field(min_length=1, max_length=PATTERN_HINT_MAX),
        AfterValidator(fits(PATTERN_HINT_MAX)),
        AfterValidator(must_show),
    ] = None
    """What `pattern` asks for, as people read it in the error: "a ticket key like ABC-123"."""
    min: StrictInt | StrictFloat | None = None
    """A number item's least accepted value."""
    max: StrictInt | StrictFloat | None = None
    """A number item's greatest accepted value."""
    integer: bool = False
    """A number item takes whole numbers only, and its answer is an `int`."""

    if TYPE_CHECKING:
        # What the constructor takes, for type checkers: options may be bare strings (each is its own
        # value and label), which `Option` validates into options.
        def __init__(
            self,
            *,
            id: str,
            text: str,
            type: ItemType | ItemTypeName,
            options: Sequence[str | Option] | None = None,
            required: bool = True,
            default: AnswerValue = None,
            multiline: bool = False,
            max_length: int | None = None,
            placeholder: str | None = None,
            min_length: int | None = None,
            pattern: str | None = None,
            pattern_hint: str | None = None,
            min: float | None = None,
            max: float | None = None,
            integer: bool = False,
        ) -> None: ...

    @property
    def is_choice(self) -> bool:
        return self.type in (ItemType.SELECT, ItemType.MULTI_SELECT)

    @property
    def is_secret(self) -> bool:
        return self.type is ItemType.SECRET

    @property
    def is_boolean(self) -> bool:
        return self.type is ItemType.BOOLEAN

    @property
    def text_limit(self) -> int:
        """The longest free-text answer accepted for this item."""
        return self.max_length or FREE_TEXT_DEFAULT_MAX

    def option_values(self) -> list[str]:
        return [o.value for o in self.options or []]

    def option(self, value: str) -> Option | None:
        return next((o for o in self.options or [] if o.value == value), None)

    @model_validator(mode="after")
    def _check_shape(self, info: ValidationInfo) -> Item:
        if self.is_choice:
            if not self.options:
                raise ValueError(f"item {self.id!r}: a {self.type.value} item needs at least one option")
            if len(self.options) > MAX_OPTIONS:
                raise ValueError(f"item {self.id!r}: at most {MAX_OPTIONS} options, got {len(self.options)}")
            values = self.option_values()
            dupes = sorted({v for v in values if values.count(v) > 1})
            if dupes:
                raise ValueError(f"item {self.id!r}: duplicate option values {dupes}")
        elif self.options is not None:
            raise ValueError(f"item {self.id!r}: options are only allowed on select and multi_select items")
        if self.type is not ItemType.FREE_TEXT and (self.multiline or self.max_length is not None):
            raise ValueError(f"item {self.id!r}: multiline and max_length only apply to free_text items")
        stored = bool((info.context or {}).get("stored"))  # valid when asked: read back as it was
        self._check_text_rules(stored)
        self._check_number_rules(stored)
        if self.is_secret and self.default is not None:
            raise ValueError(f"item {self.id!r}: a secret item takes no default (it would be stored in the clear)")
        if self.default is not None and not stored:
            problem = check_value(self, self.default)
            if problem:
                raise ValueError(f"item {self.id!r}: default is not a valid answer: {problem}")
        return self

    def _check_text_rules(self, stored: bool = False) -> None:
        """`min_length`, `pattern` and `pattern_hint` belong to free text and must agree.

        A stored item's pattern is not compiled again. So one kept before patterns were RE2 stays
        readable.
        """
        given = [n for n in ("min_length", "pattern", "pattern_hint") if getattr(self, n) is not None]
        if given and self.type is not ItemType.FREE_TEXT:
            raise ValueError(f"item {self.id!r}: {', '.join(given)} only apply to free_text items")
        if self.min_length is not None and self.min_length > self.text_limit:
            raise ValueError(f"item {self.id!r}: min_length {self.min_length} is over max_length {self.text_limit}")
        if self.pattern_hint is not None and self.pattern is None:
            raise ValueError(f"item {self.id!r}: pattern_hint describes a pattern; give the pattern too")
        if self.pattern is not None and not stored and (why := pattern_problem(self.pattern)) is not None:
            raise ValueError(f"item {self.id!r}: pattern is not a regular expression RE2 accepts: {why}")

    def _check_number_rules(self, stored: bool = False) -> None:
        """`min`, `max` and `integer` belong to numbers, with finite, ordered bounds.

        A stored item's bounds need only be finite. So one kept before bounds had to be typeable
        stays readable.
        """
        if self.type is not ItemType.NUMBER:
            if self.min is not None or self.max is not None or self.integer:
                raise ValueError(f"item {self.id!r}: min, max and integer only apply to number items")
            return
        for name, bound in (("min", self.min), ("max", self.max)):
            if bound is None:
                continue
            if stored and isinstance(bound, float) and not math.isfinite(bound):
                raise ValueError(f"item {self.id!r}: {name} must be a finite number")
            if not stored and (problem := number_problem(bound)) is not None:
                raise ValueError(f"item {self.id!r}: {name}: {problem}")
        if self.integer and any(isinstance(b, float) and not b.is_integer() for b in (self.min, self.max)):
            raise ValueError(f"item {self.id!r}: an integer item's min and max must be whole numbers")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"item {self.id!r}: min {self.min} is greater than max {self.max}")


class Approval(_Strict):
    """An action and its proposed arguments, for a person to approve, edit or reject.

    See `workers.interaction.approval`. `editable` names the arguments that have an item.
    """

    action: Annotated[str, Field(min_length=1, max_length=REASON_MAX)]
    args: dict[str, Any]
    editable: list[str] = Field(default_factory=list)
    standing: Annotated[str | None, Field(min_length=1, max_length=75)] = None
    """When set, a standing approval may be chosen too (`APPROVE_STANDING`), labelled with this text."""
    input_schema: dict[str, Any] | None = None
    """The JSON Schema the action's arguments must meet: an edit that does not is refused, naming the field."""


class Request(_Strict):
    """A reason and up to ten items, put to the people allowed to answer."""

    reason: Annotated[
        str, Field(min_length=1, max_length=REASON_MAX), AfterValidator(fits(REASON_MAX)), AfterValidator(must_show)
    ]
    items: Annotated[list[Item], Field(min_length=1, max_length=MAX_ITEMS)]
    assignees: list[str] = Field(default_factory=list)
    expires_in: Annotated[int | None, _DELAY, COUNT] = None
    on_expiry: OnExpiry = OnExpiry.FAIL
    show_answers: bool = False  # `ask_each`: the shared message shows what each person answered, not only who
    escalate_after: Annotated[int | None, _DELAY, COUNT] = None
    """Seconds after which, still unanswered, the question is also put to `escalate_to`."""
    escalate_to: list[str] = Field(default_factory=list)
    last_call: Annotated[int | None, Field(ge=0, description="seconds before expiry; 0: none"), COUNT] = None
    """Seconds before expiry of a last reminder; None: 15 minutes when `expires_in` is over an hour."""
    claim: bool = False
    """A Claim button: the first person to click it is the only one who may answer, until released."""
    approval: Approval | None = None
    """Set when the request asks to approve an action (`run.approve`): hosts show its arguments."""
    form: Annotated[str | None, Field(max_length=300)] = None
    """The pydantic model (`module:QualName`) whose validators also check the answers (`run.ask_form`)."""

    if TYPE_CHECKING:
        # What the constructor takes, for type checkers: any sequences, and `on_expiry` by its value.
        def __init__(
            self,
            *,
            reason: str,
            items: Sequence[Item],
            assignees: Sequence[str] = (),
            expires_in: int | None = None,
            on_expiry: OnExpiry | Literal["fail", "use_defaults"] = OnExpiry.FAIL,
            show_answers: bool = False,
            escalate_after: int | None = None,
            escalate_to: Sequence[str] = (),
            last_call: int | None = None,
            claim: bool = False,
            approval: Approval | None = None,
            form: str | None = None,
        ) -> None: ...

    @field_validator("items")
    @classmethod
    def _unique_ids(cls, items: list[Item]) -> list[Item]:
        ids = [i.id for i in items]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate item ids {dupes}")
        return items

    @field_validator("expires_in", "escalate_after")
    @classmethod
    def _at_most_90_days(cls, seconds: int | None, info: ValidationInfo) -> int | None:
        if seconds is not None and seconds > DELAY_MAX and not (info.context or {}).get("stored"):
            raise ValueError(f"{info.field_name} must be at most {DELAY_MAX} seconds (90 days)")
        return seconds

    @field_validator("assignees", "escalate_to")
    @classmethod
    def _assignee_ids(cls, assignees: list[str]) -> list[str]:
        for a in assignees:
            if not re.fullmatch(ASSIGNEE_PATTERN, a):
                raise ValueError(f"assignee {a!r} is not a user id or user group id")
        return list(dict.fromkeys(assignees))

    @model_validator(mode="after")
    def _escalation(self) -> Request:
        """Escalation needs a delay and people, and must precede expiry."""
        if (self.escalate_after is None) != (not self.escalate_to):
            raise ValueError("escalate_after and escalate_to go together: give both or neither")
        if self.escalate_after is not None and self.expires_in is not None and self.escalate_after >= self.expires_in:
            raise ValueError(
                f"escalate_after ({self.escalate_after}s) must be shorter than expires_in ({self.expires_in}s), "
                "or the question expires before it is escalated"
            )
        return self

    @model_validator(mode="after")
    def _last_call_before_expiry(self) -> Request:
        """A last call needs an expiry to come before."""
        if self.last_call and self.expires_in is None:
            raise ValueError("last_call needs expires_in: it is a reminder that many seconds before expiry")
        if self.last_call and self.expires_in is not None and self.last_call >= self.expires_in:
            raise ValueError(f"last_call ({self.last_call}s) must be shorter than expires_in ({self.expires_in}s)")
        return self

    @model_validator(mode="after")
    def _claim_needs_several(self, info: ValidationInfo) -> Request:
        """Claim picks one of several who may answer, so one is not enough."""
        if (info.context or {}).get("stored"):
            return self
        if self.claim and len(self.assignees) == 1 and not self.assignees[0].startswith("S"):
            raise ValueError("claim is for a question put to a channel, a user group or several people")
        return self

    def last_call_lead(self) -> int | None:
        """How long before expiry the last call comes, or None for no last call."""
        if self.expires_in is None or self.last_call == 0:
            return None
        if self.last_call is not None:
            return self.last_call
        return LAST_CALL_DEFAULT if self.expires_in > LAST_CALL_FROM else None

    @model_validator(mode="after")
    def _approval_shape(self) -> Request:
        """An approval asks its decision, and each argument it calls editable is one of its items."""
        if self.approval is None:
            return self
        decision = self.item("_decision")
        expected = ["approve", *(["approve_standing"] if self.approval.standing else []), "reject"]
        if decision is None or decision.option_values() != expected:
            raise ValueError(f'an approval needs the "_decision" select of {", ".join(map(repr, expected))}')
        missing = [name for name in self.approval.editable if self.item(name) is None or name not in self.approval.args]
        if missing:
            raise ValueError(f"approval: editable {missing} must each be an argument with an item")
        return self

    def item(self, item_id: str) -> Item | None:
        return next((i for i in self.items if i.id == item_id), None)

    def typed_other(self, item_id: str) -> Item | None:
        """The free-text item `<item_id>__other` that may replace select `item_id`'s choice.

        None when the request has no such item.
        """
        item, other = self.item(item_id), self.item(item_id + OTHER_SUFFIX)
        if item is None or other is None or item.type is not ItemType.SELECT or other.type is not ItemType.FREE_TEXT:
            return None
        return other

    @property
    def has_secret(self) -> bool:
        """Whether any item asks for a secret.

        Such a request is answered only where nobody sees it typed.
        """
        return any(i.is_secret for i in self.items)

    def validate_answers(self, answers: list[Answer]) -> list[Answer]:
        """Normalise `answers` against this request, or raise `AnswerError` listing each problem."""
        valid = validate_answers(self, answers)
        if self.form is not None:
            check_form(self, valid)
        return valid

    def defaults(self) -> list[Answer]:
        """The answers a run gets when it expires with `on_expiry="use_defaults"`."""
        return [Answer.for_item(i, normalise(i, i.default)) for i in self.items if i.default is not None]


class Outcome(_Strict):
    """What a host's `solicit` returns: paused (answers later) or the answers now."""

    paused: bool
    answers: list[Answer] = Field(default_factory=list)
