"""Typed views of what Redis holds about a run and its questions."""

from __future__ import annotations

import copy
import json
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from workers.interaction import Answer, ContextChange, Request
from workers.interaction.context import canonical_form, digest
from workers.interaction.models import STORED
from workers.interaction.views import QuestionState
from workers.store.pieces import compact, gathered, spread


class RunStatus(StrEnum):
    """Where a run is in its life, per the README's state machine."""

    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.EXPIRED})
LIVE_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED)
TOKEN_OWNER = "token:"
"""The namespace of API tokens' owner ids; a local MCP server's is `mcp:` (never a token's)."""
LOCAL_OWNER = "mcp:"


InterruptState = QuestionState
"""A question's state: the port's vocabulary, which hosts read too."""


class CloseMode(StrEnum):
    """How a question closes: answered, expired or cancelled.

    It is the closing scripts' `mode`.
    """

    ANSWER = "answer"
    EXPIRE = "expire"
    CANCEL = "cancel"

    @property
    def event(self) -> str:
        """The run history's name for a close of this mode."""
        return _CLOSE_EVENTS[self]


_CLOSE_EVENTS = {CloseMode.ANSWER: "answered", CloseMode.EXPIRE: "expired", CloseMode.CANCEL: "cancelled"}


class GroupState(StrEnum):
    """Where a group of questions is: open, done (run queued), or cancelled."""

    OPEN = "open"
    DONE = "done"
    CANCELLED = "cancelled"


class RefusalReason(StrEnum):
    """Why an answer, expiry or cancel was not accepted, with nothing written.

    The store's Lua scripts reply with these values. Acceptance raises them. Each host words them
    for people. It is one list, so a new reason cannot be half-handled.
    """

    UNKNOWN = "unknown"  # no such question
    ANSWERED = "answered"  # someone answered first
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    NOT_OPEN = "not_open"  # still being posted, or its run is not paused on it
    NOT_ALLOWED = "not_allowed"  # the answerer is not among the assignees
    NOT_DUE = "not_due"  # an expiry before the question's deadline
    WRONG_TEAM = "wrong_team"  # the answer came from another workspace than the run's
    WRONG_PLACE = "wrong_place"  # the click came from another conversation or message than the question's
    INVALID = "invalid"  # the answers do not fit the request
    AMBIGUOUS = "ambiguous"  # a typed reply that matches no single option
    FORM_ONLY = "form_only"  # a typed reply to a question with a secret, which is answered only in its form
    SEVERAL_FIELDS = "several_fields"  # a typed reply to a question that only Submit or its form can answer
    UNAVAILABLE = "unavailable"  # Redis could not be reached; ask again
    NOT_NEEDED = "not_needed"  # one of several questions whose run went on without it (`ask_any`, a quorum)
    UNCONFIRMED = "unconfirmed"  # accepted on the master, but no replica confirmed it in time; ask again


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RunRecord(_Record):
    """The run hash, decoded."""

    id: str
    agent: str
    text: str = ""
    started_by: str
    conversation: dict[str, Any] = Field(default_factory=dict)
    status: RunStatus
    created_at: float
    updated_at: float
    epoch: int = 0
    failures: int = 0
    interrupt: str = ""
    result: str = ""
    error: str = ""
    lease_until: float = 0.0
    job: str = ""

    @classmethod
    def from_hash(cls, data: dict[str, str]) -> RunRecord:
        fields: dict[str, Any] = dict(data)
        fields["conversation"] = json.loads(gathered(data, "conversation") or "{}")
        return cls.model_validate(fields)

    @classmethod
    def unreadable(cls, run_id: str, data: dict[str, str], error: str) -> RunRecord:
        """A stand-in for an unreadable run hash, so a listing shows it and goes on."""

        def number(name: str) -> float:
            try:
                return float(data.get(name) or 0)
            except ValueError:
                return 0.0

        status = data.get("status", "")
        return cls(
            id=run_id,
            agent=data.get("agent") or "?",
            text=f"(unreadable record: {error})",
            started_by=data.get("started_by") or "?",
            status=RunStatus(status) if status in RunStatus._value2member_map_ else RunStatus.FAILED,
            created_at=number("created_at"),
            updated_at=number("updated_at"),
            error=f"this run's record cannot be read: {error}",
        )

    def log_context(self) -> dict[str, Any]:
        """The correlation fields every log line about this run carries."""
        ctx: dict[str, Any] = {"run_id": self.id, "agent": self.agent}
        for name in ("team", "channel"):
            if name in self.conversation:
                ctx[name] = self.conversation[name]
        if self.interrupt:
            ctx["interrupt_id"] = self.interrupt
        return ctx


def stored_request(request: Request) -> str:
    """A request's JSON as kept in Redis, without what reads back the same when left out.

    Null fields and fields at their defaults are left out. No default depends on another field.
    An option labelled with its own value is kept as that bare string. `Option` reads it back
    as the same option. A request of two items takes about half the bytes.
    """
    data = request.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    for item in data["items"]:
        if "options" in item:
            item["options"] = [_bare(option) for option in item["options"]]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _bare(option: dict[str, Any]) -> dict[str, Any] | str:
    """An option as its value alone when that is all it says (its label is its value)."""
    return option["value"] if option == {"value": option["value"], "label": option["value"]} else option


@lru_cache(maxsize=4096)
def _request(raw: str) -> Request:
    """Parse a stored request once per process: an interrupt's request never changes."""
    return Request.model_validate_json(raw, context=STORED)


class InterruptRecord(_Record):
    """One question put to people, with its outcome once closed."""

    id: str
    run_id: str
    key: str
    attempt: int
    request: Request
    assignees: list[str]
    asked_at: float
    expires_at: float | None = None
    remind_at: float | None = None
    last_call_at: float | None = None  # the last reminder, a lead before `expires_at` (`Request.last_call`)
    state: InterruptState
    answers: list[Answer] = Field(default_factory=list)
    answered_by: str = ""
    answered_at: float | None = None
    answered_team: str = ""  # the answerer's workspace, kept only where it is not `team` (a shared channel)
    closed_by: str = ""
    team: str = ""
    enterprise: str = ""
    message: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] | None = None  # the facts the answer is bound to, when the agent passed any
    context_digest: str = ""  # sha256 of the context's canonical JSON
    context_changes: list[ContextChange] = Field(default_factory=list)  # what voided the attempt before this one
    group: str = ""  # the group of questions asked at once (`ask_all`, `ask_any`, `ask_each`) it belongs to
    shown: bool = False  # a group's member whose closing was shown on its message before the run resumed
    # Who may answer changes while the question is open (`workers.store.people`): `assignees` is
    # always the people who may answer now, with user groups resolved to their members.
    groups: dict[str, list[str]] = Field(default_factory=dict)  # user group id -> members when asked
    escalate_at: float | None = None
    escalate_to: list[str] = Field(default_factory=list)  # people added at `escalate_at`
    escalated_at: float | None = None
    handoffs: list[dict[str, Any]] = Field(default_factory=list)  # reassignments: by, from, to, at
    claimed_by: str = ""  # who claimed it (`Request.claim`): the only one who may answer until released
    claimed_at: float | None = None
    claimed_from: list[str] = Field(default_factory=list)  # the assignees before the claim, put back on release
    standing_in: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)  # delegate -> [{user, until}] away
    declined: bool = False  # cancelled by a person asked, who declined to answer (`workers.runtime.decline`)

    @classmethod
    def from_hash(cls, data: dict[str, str]) -> InterruptRecord:
        data = {**data, **{name: v for name in _SPREAD if (v := gathered(data, name)) is not None}}
        fields: dict[str, Any] = {k: v for k, v in data.items() if v != ""}
        fields["request"] = _request(data["request"])
        fields["answers"] = [Answer.model_validate(a) for a in _json(data, "answers", [])]
        fields["context"] = _json(data, "context", None)
        if data.get("context") and not data.get("context_digest"):
            fields["context_digest"] = context_digest(data["context"])
        for name in _JSON_FIELDS:
            fields[name] = _json(data, name, _JSON_FIELDS[name])
        if data.get(SHOWN_DIGEST):  # kept apart from the message's place (`message_fields`)
            fields["message"] = {**fields["message"], SHOWN_DIGEST: data[SHOWN_DIGEST]}
        return cls.model_validate(fields)


SHOWN_DIGEST = "blocks_digest"
"""The digest of the blocks a host posted: part of an interrupt's `message`, kept in its own field."""


def message_fields(message: dict[str, Any]) -> dict[str, str]:
    """Where a question was posted, as an interrupt's hash keeps it: the blocks' digest apart.

    Together the place and the 64-character digest pass Redis's 64-byte compact limit, which
    would turn the whole hash into a table. The digest's field is always written, empty
    when there is none, so no digest outlives the message it described.
    """
    place = {k: v for k, v in message.items() if k != SHOWN_DIGEST}
    return {"message": compact(place), SHOWN_DIGEST: str(message.get(SHOWN_DIGEST) or "")}


@lru_cache(maxsize=4096)
def context_digest(context_json: str) -> str:
    """The sha256 of a question's context in canonical form, read from the context it keeps.

    It is not stored: 64 characters more would take a question's hash past a size class.
    A question written before keeps its own digest, which is the same.
    """
    return digest(canonical_form(json.loads(context_json)))


_SPREAD = ("request", "context", "context_changes")
"""An interrupt's fields that may be long, written in pieces (`workers.store.pieces`)."""

# The interrupt's JSON fields and their value when absent; an absent one (most are, on
# most questions) is not parsed at all: the acceptance reads an interrupt on every click.
_JSON_FIELDS: dict[str, Any] = {
    "assignees": [],
    "message": {},
    "context_changes": [],
    "groups": {},
    "escalate_to": [],
    "handoffs": [],
    "claimed_from": [],
    "standing_in": {},
}


def _json(data: dict[str, str], name: str, empty: Any) -> Any:
    raw = data.get(name)
    return json.loads(raw) if raw else copy.copy(empty)


class HistoryEntry(_Record):
    """One line of a run's history: what happened, when, by whom."""

    at: float
    event: str
    by: str = ""
    detail: dict[str, Any] = Field(default_factory=dict)


STARTED = "started"
STARTED_FIELDS = ("created_at", "started_by", "agent", "text")
"""The run hash's fields its history's first entry, the start, is made from."""


def with_start(entries: list[HistoryEntry], run: dict[str, str | None]) -> list[HistoryEntry]:
    """A run's history led by its start, made from the run's hash (`STARTED_FIELDS`).

    The start repeats what the run's hash holds, so it is not stored: a list of one entry
    would cost a pending question a third of a kilobyte. Runs created before still have it first.
    """
    if (entries and entries[0].event == STARTED) or not run.get("created_at"):
        return entries
    detail = {"agent": run.get("agent") or "", "text": run.get("text") or ""}
    start = HistoryEntry(at=float(run["created_at"] or 0), event=STARTED, by=run.get("started_by") or "", detail=detail)
    return [start, *entries]


# ---- the HTTP API (workers/store/questions.py) ----------------------------------------
class ApiTokenRecord(_Record):
    """An API token as stored: name, value's sha256, scopes and webhook secret."""

    name: str
    token_hash: str
    scopes: list[str]
    webhook_secret: str
    created_at: float
    rate_limit: int | None = None  # requests per window; None: PARLEY_API_RATE_LIMIT
    open_questions: int | None = None  # questions open at once; None: PARLEY_API_OPEN_QUESTIONS
    team: str = ""  # the Slack workspace (T…, or E… for an org-wide install) its questions belong to
    temporal: list[str] = Field(default_factory=list)  # workflow-id globs it may signal; none by default

    @property
    def owner(self) -> str:
        """Who this token's questions belong to, derived from its hash.

        So a new token under a revoked token's name is someone else. The name is only shown.
        """
        return f"{TOKEN_OWNER}{self.token_hash[:24]}"

    def to_hash(self) -> dict[str, str]:
        data = {
            "name": self.name,
            "token_hash": self.token_hash,
            "scopes": json.dumps(self.scopes),
            "webhook_secret": self.webhook_secret,
            "created_at": repr(self.created_at),
        }
        data |= {"team": self.team} if self.team else {}
        data |= {"temporal": json.dumps(self.temporal)} if self.temporal else {}
        data |= {"open_questions": str(self.open_questions)} if self.open_questions else {}
        return data | ({"rate_limit": str(self.rate_limit)} if self.rate_limit else {})

    @classmethod
    def from_hash(cls, data: dict[str, str]) -> ApiTokenRecord:
        fields: dict[str, Any] = {k: v for k, v in data.items() if v != ""}
        temporal = json.loads(data.get("temporal") or "[]")
        return cls.model_validate({**fields, "scopes": json.loads(data.get("scopes") or "[]"), "temporal": temporal})


class WebhookState(_Record):
    """Where a webhook delivery is: pending, delivered, or failed after every attempt."""

    id: str
    event: str
    status: str = "pending"
    attempts: int = 0
    last_error: str = ""
    last_status: int | None = None
    delivered_at: float | None = None
    payload: str = ""  # the exact body every attempt sends
    circuit: str = "closed"  # the destination host's circuit breaker, as the last attempt saw it
    circuit_open_until: float | None = None


class TemporalTarget(_Record):
    """A Temporal workflow waiting on a question, to be signalled its outcome.

    See `workers.questions.signals`.
    """

    workflow_id: str
    namespace: str
    key: str  # the id the workflow asked under (its Idempotency-Key): the signal names it


class ApiQuestionRecord(_Record):
    """What the API keeps about a question beside its run, whose id it shares."""

    id: str
    token: str  # the asker's name, shown as the question's origin
    channel: str = ""
    user: str = ""
    thread_ts: str = ""
    callback_url: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    request: Request
    context: dict[str, Any] | None = None
    created_at: float
    webhook: WebhookState | None = None
    temporal: TemporalTarget | None = None  # a workflow to signal when the question ends, instead of a webhook
    signal: WebhookState | None = None  # the delivery of that signal, as for a webhook
    quorum: int | None = None  # asked of each assignee separately (`run.ask_each`); answered when this many did
    team: str = ""  # the asking token's workspace, when it has one
    owner: str = ""  # who the question belongs to (`ApiTokenRecord.owner`, `mcp:<origin>`); "": asked before owners
    asked: str = ""  # the interrupt that holds the request and context, which the hash then leaves out
    whole_args: dict[str, Any] | None = None
    """An approval's args whole, when some are shown in part: its decision carries them (`approved_args`)."""

    def to_hash(self) -> dict[str, str]:
        """The record's fields as its hash keeps them: empty text is left out, and reads back empty."""
        text = {"channel": self.channel, "user": self.user, "thread_ts": self.thread_ts}
        text["callback_url"] = self.callback_url
        data = {
            "id": self.id,
            "token": self.token,
            **{name: value for name, value in text.items() if value},
            **spread("metadata", compact(self.metadata)),
            **spread("request", stored_request(self.request)),
            "created_at": repr(self.created_at),
        }
        if self.team:
            data["team"] = self.team
        if self.owner:
            data["owner"] = self.owner
        if self.context is not None:
            data.update(spread("context", compact(self.context)))
        if self.whole_args is not None:
            data.update(spread("whole_args", compact(self.whole_args)))
        if self.temporal is not None:
            data["temporal"] = self.temporal.model_dump_json()
        if self.quorum is not None:
            data["quorum"] = str(self.quorum)
        return data

    @classmethod
    def from_hash(cls, data: dict[str, str]) -> ApiQuestionRecord:
        spread_out = ("metadata", "request", "context", "whole_args")
        data = {**data, **{name: v for name in spread_out if (v := gathered(data, name))}}
        fields: dict[str, Any] = dict(data)
        fields["metadata"] = json.loads(data.get("metadata") or "{}")
        fields["request"] = _request(data["request"])
        fields["context"] = json.loads(data["context"]) if data.get("context") else None
        fields["whole_args"] = json.loads(data["whole_args"]) if data.get("whole_args") else None
        fields["webhook"] = WebhookState.model_validate_json(data["webhook"]) if data.get("webhook") else None
        fields["temporal"] = TemporalTarget.model_validate_json(data["temporal"]) if data.get("temporal") else None
        fields["signal"] = WebhookState.model_validate_json(data["signal"]) if data.get("signal") else None
        fields["quorum"] = int(data["quorum"]) if data.get("quorum") else None
        return cls.model_validate(fields)
