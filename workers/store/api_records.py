"""The HTTP API's records: its tokens, its questions and their deliveries.

`QuestionStore` (`questions.py`) keeps them in Redis. An API question shares its run's id.
Its webhook or Temporal signal is tracked as a `WebhookState`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from workers.interaction import Request
from workers.store.interrupt_records import parsed_request, stored_request
from workers.store.pieces import compact, gathered, spread
from workers.store.run_records import Record

TOKEN_OWNER = "token:"
"""The namespace of API tokens' owner ids; a local MCP server's is `mcp:` (never a token's)."""
LOCAL_OWNER = "mcp:"


class ApiTokenRecord(Record):
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


class WebhookState(Record):
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


class TemporalTarget(Record):
    """A Temporal workflow waiting on a question, to be signalled its outcome.

    See `workers.questions.signals`.
    """

    workflow_id: str
    namespace: str
    key: str  # the id the workflow asked under (its Idempotency-Key): the signal names it


class ApiQuestionRecord(Record):
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
        fields["request"] = parsed_request(data["request"])
        fields["context"] = json.loads(data["context"]) if data.get("context") else None
        fields["whole_args"] = json.loads(data["whole_args"]) if data.get("whole_args") else None
        fields["webhook"] = WebhookState.model_validate_json(data["webhook"]) if data.get("webhook") else None
        fields["temporal"] = TemporalTarget.model_validate_json(data["temporal"]) if data.get("temporal") else None
        fields["signal"] = WebhookState.model_validate_json(data["signal"]) if data.get("signal") else None
        fields["quorum"] = int(data["quorum"]) if data.get("quorum") else None
        return cls.model_validate(fields)
