"""The API's bodies as pydantic models: what a caller sends and gets back.

The OpenAPI document (`GET /api/v1/openapi.json`) is generated from these and the port's
`Request`. So the schema and the validation are one thing.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from workers.interaction import AnswerValue, ContextError, Decision, FormError, Request
from workers.interaction.approval import approval_request
from workers.interaction.context import DEPTH_MAX, canonical, too_deep
from workers.interaction.models import COUNT
from workers.runtime.arg_schema import problems

METADATA_MAX = 4096  # bytes of compact JSON
MAX_ASSIGNEES = 50  # ids in `assignees` (and in `escalate_to`): each person is sent a DM
ELICITATION = "elicitation"
"""The metadata key of a question asked as an MCP elicitation (its value: the shape of the form's schema)."""
DECLINABLE = "declinable"
"""The conversation key of a question asked as an MCP elicitation: its message offers "Decline"."""
CHANNEL_PATTERN = r"^(?:[CGD][A-Z0-9]{2,20}|#[a-z0-9][a-z0-9._-]{0,79})$"
"""A channel id, or `#name` (Slack's channel names: lower case, digits, `-`, `_` and `.`, at most 80)."""
USER_PATTERN = r"^[UW][A-Z0-9]{2,20}$"
TS_PATTERN = r"^\d{1,12}\.\d{1,8}$"
MAX_EACH = 20  # people a question with a quorum asks separately (`run.ask_each`'s limit)


class TokenScope(StrEnum):
    """What a token may do.

    `ask` creates, reads and cancels its own questions. `admin` reads and cancels all.
    """

    ASK = "ask"
    ADMIN = "admin"


class QuestionStatus(StrEnum):
    """Where a question is. `failed`: it could not be posted (the error says why)."""

    WAITING = "waiting"
    ANSWERED = "answered"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    FAILED = "failed"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TemporalTargetBody(_Body):
    """A Temporal workflow to signal when the question ends (`workers.integrations.temporal`)."""

    workflow_id: Annotated[str, Field(min_length=1, max_length=1000, description="the waiting workflow's id")]
    namespace: Annotated[str, Field(min_length=1, max_length=255, description="its namespace")]
    key: Annotated[
        str, Field(min_length=1, max_length=255, description="the id the workflow waits on; the signal names it")
    ]


class QuestionCreate(_Body):
    """`POST /api/v1/questions`: the request as `workers.interaction.Request` serialises, and where to ask it."""

    request: Request
    channel: Annotated[str | None, Field(pattern=CHANNEL_PATTERN, description="a channel id (C…, G…), or #name")] = None
    user: Annotated[str | None, Field(pattern=USER_PATTERN, description="a user id: the question goes to a DM")] = None
    thread_ts: Annotated[str | None, Field(pattern=TS_PATTERN, description="post in this thread")] = None
    callback_url: Annotated[str | None, Field(max_length=2000, description="http(s) URL for signed webhooks")] = None
    metadata: dict[str, Any] = Field(default_factory=dict, description="returned as given; at most 4 KB of JSON")
    context: dict[str, Any] | None = Field(default=None, description="the facts the answer is bound to")
    temporal: TemporalTargetBody | None = Field(
        default=None,
        description="a Temporal workflow to signal with the outcome, instead of a webhook; "
        "its id must match one of the token's `--temporal` grants",
    )
    quorum: Annotated[
        int | None,
        Field(ge=1, description="ask each assignee separately; the question is answered when this many answered"),
        COUNT,
    ] = None
    _whole_args: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def whole_args(self) -> dict[str, Any] | None:
        """An approval's args whole, when some are shown in part (`ApprovalCreate.question`).

        Never read from a body. The question keeps them, and its decision carries them.
        """
        return self._whole_args

    @field_validator("callback_url")
    @classmethod
    def _http_only(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not v.lower().startswith(("http://", "https://")):
            raise ValueError("callback_url must be an http or https URL")
        try:
            parts = urlsplit(v)
            host, _ = parts.hostname, parts.port  # each raises on a bad IPv6 address or port
        except ValueError as exc:
            raise ValueError(f"callback_url is not a valid URL: {exc}") from None
        if not host:
            raise ValueError("callback_url names no host")
        return v

    @field_validator("request")
    @classmethod
    def _no_form(cls, v: Request) -> Request:
        if v.form is not None:
            raise ValueError("form: a pydantic model is named only by an agent's run.ask_form, not over the API")
        return v

    @field_validator("request")
    @classmethod
    def _few_people(cls, v: Request) -> Request:
        for name in ("assignees", "escalate_to"):
            count = len(getattr(v, name))
            if count > MAX_ASSIGNEES:
                raise ValueError(f"{name}: at most {MAX_ASSIGNEES} ids (each is sent a DM), not {count}")
        return v

    @field_validator("metadata")
    @classmethod
    def _small(cls, v: dict[str, Any]) -> dict[str, Any]:
        if too_deep(v):
            raise ValueError(f"metadata nests more than {DEPTH_MAX} levels of objects and lists")
        try:
            size = len(json.dumps(v, separators=(",", ":"), allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"metadata must be plain JSON: {exc}") from None
        if size > METADATA_MAX:
            raise ValueError(f"metadata is {size} bytes of JSON, over the limit of {METADATA_MAX}")
        return v

    @field_validator("context")
    @classmethod
    def _context(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            try:
                canonical(v)
            except ContextError as exc:
                raise ValueError(str(exc)) from None
        return v

    @model_validator(mode="after")
    def _one_place(self) -> QuestionCreate:
        if (self.channel is None) == (self.user is None):
            raise ValueError('give exactly one of "channel" (a channel id) or "user" (a user id, for a DM)')
        if self.callback_url is not None and self.temporal is not None:
            raise ValueError('give at most one delivery target: "callback_url" or "temporal"')
        if self.quorum is not None:
            count = len(self.request.assignees)
            if self.channel is None or count == 0:
                raise ValueError("quorum asks each of the request's assignees in a channel: give both")
            if self.quorum > min(count, MAX_EACH):
                raise ValueError(f"quorum {self.quorum} is more than the {min(count, MAX_EACH)} people who can answer")
            if self.callback_url is not None:
                raise ValueError("quorum: no webhook is sent for a question asked of each person; use temporal")
            if any(item.is_secret for item in self.request.items):
                raise ValueError("quorum: a question asked of each person separately cannot hold a secret item")
        return self


class ApprovalCreate(_Body):
    """`POST /api/v1/approvals`: an action and its args, to approve, edit or reject.

    The approval is put in `channel`. It is bound to `args`, as a question's answer is to its
    `context`. `schema`, the JSON Schema of an object, types the editable args. Without it they are
    inferred from their values. Args over the 2,000 characters an approval binds have their longest
    values shown in part, bound by their sha256 and not editable. The decision carries them whole.
    """

    channel: Annotated[str, Field(pattern=CHANNEL_PATTERN, description="a channel id (C…, G…)")]
    action: Annotated[str, Field(min_length=1, max_length=3000, description="what is to be done")]
    args: dict[str, Any] = Field(
        description="the arguments proposed for it; past 2,000 characters, the longest are shown in part"
    )
    schema_: dict[str, Any] | None = Field(default=None, alias="schema", description="JSON Schema of the args")
    editable: bool | list[str] = Field(default=True, description="which args the approver may edit")
    assignees: list[str] = Field(default_factory=list, max_length=MAX_ASSIGNEES)
    expires_in: int | None = None
    callback_url: Annotated[str | None, Field(max_length=2000, description="http(s) URL for signed webhooks")] = None
    temporal: TemporalTargetBody | None = Field(
        default=None, description="a Temporal workflow to signal with the decision, instead of a webhook"
    )

    def question(self) -> QuestionCreate:
        """This approval as the question the API asks, bound to `args` as shown.

        Its request carries the approval. Args shown in part go with it whole (`whole_args`).
        `ValueError` says why it cannot be asked, like args too long even in part, or a schema its
        edits could not be checked against (`SchemaUnusable`).
        """
        try:
            request = approval_request(
                self.action,
                self.args,
                schema=self.schema_,
                editable=self.editable,
                assignees=self.assignees,
                expires_in=self.expires_in,
                in_part=True,
            )
        except (FormError, ContextError) as exc:
            raise ValueError(str(exc)) from None
        assert request.approval is not None
        if request.approval.input_schema is not None:
            problems(request.approval.input_schema, self.args)  # SchemaUnusable: edits could not be checked
        shown = request.approval.args
        question = QuestionCreate(
            request=request, channel=self.channel, callback_url=self.callback_url, temporal=self.temporal, context=shown
        )
        question._whole_args = dict(self.args) if shown != self.args else None
        return question


class WebhookView(_Body):
    """The delivery of the question's webhook, once closed with a `callback_url`."""

    id: str
    event: str
    status: Annotated[str, Field(description="pending, delivered or failed")]
    attempts: int
    last_error: str | None = None
    last_status: int | None = None
    delivered_at: datetime | None = None
    circuit: Annotated[
        str, Field(description="the destination host's circuit breaker at the last attempt: closed, open or half_open")
    ] = "closed"
    circuit_open_until: Annotated[datetime | None, Field(description="while open, when the next attempt may go")] = None


class TemporalView(_Body):
    """The workflow a question signals when it ends, and the delivery's state."""

    workflow_id: str
    namespace: str
    key: str
    status: Annotated[str, Field(description="waiting (not ended yet), pending, delivered or failed")] = "waiting"
    attempts: int = 0
    last_error: str | None = None
    delivered_at: datetime | None = None


class QuestionView(_Body):
    """`GET /api/v1/questions/{id}` (and the webhook's `data`)."""

    id: str
    kind: Annotated[str, Field(description='"question", or "approval" for one asked by POST /api/v1/approvals')] = (
        "question"
    )
    status: QuestionStatus
    answers: dict[str, AnswerValue] | None = None
    answers_by: dict[str, dict[str, AnswerValue]] | None = Field(
        default=None, description="with a quorum, once answered: each person's own answers, by user id"
    )
    decision: Decision | None = Field(default=None, description="an approval's decision, once answered")
    answered_by: str | None = None
    answered_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    channel: str | None = None
    message_ts: str | None = None
    thread_ts: str | None = None
    expires_at: datetime | None = None
    created_at: datetime
    origin: str
    reason: str
    context: dict[str, Any] | None = None
    cancelled_by: str | None = None
    declined: bool = Field(
        default=False, description="cancelled by a person asked, who declined it in Slack (its Decline button)"
    )
    error: str | None = None
    webhook: WebhookView | None = None
    temporal: TemporalView | None = None
    receipt: dict[str, Any] | None = Field(
        default=None,
        description="the signed receipt (docs/receipts.md): in a webhook's data; else GET /questions/{id}/receipt",
    )


class QuestionPage(_Body):
    """`GET /api/v1/questions`: newest first.

    Pass `next_cursor` as `cursor` for the next page.
    """

    questions: list[QuestionView]
    next_cursor: str | None = None


class ConfirmBody(_Body):
    """`POST /api/v1/questions/{id}/confirm`: the facts the caller holds now."""

    context: dict[str, Any] | None = None


class ConfirmResult(_Body):
    """The facts are those the answer was given on."""

    id: str
    status: QuestionStatus
    context_digest: str
    unchanged: bool = True


class Event(_Body):
    """The body of a webhook: `question.answered`, `question.expired` or `question.cancelled`."""

    type: str
    data: QuestionView
