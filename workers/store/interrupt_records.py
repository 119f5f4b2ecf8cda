"""A question as Redis holds it, with how it closes or is refused.

An interrupt's hash reads back as `InterruptRecord`. Its states, close modes and refusal
reasons are the words the Lua scripts use too.
"""

from __future__ import annotations

import copy
import json
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import Field

from workers.interaction import Answer, ContextChange, Request
from workers.interaction.context import canonical_form, digest
from workers.interaction.models import STORED
from workers.interaction.views import QuestionState
from workers.store.pieces import compact, gathered
from workers.store.run_records import Record

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
def parsed_request(raw: str) -> Request:
    """Parse a stored request once per process: an interrupt's request never changes."""
    return Request.model_validate_json(raw, context=STORED)


class InterruptRecord(Record):
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
        fields["request"] = parsed_request(data["request"])
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
