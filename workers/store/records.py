"""Typed views of what Redis holds about a run and its questions, in one place.

Over a hundred modules import these names from here. Each lives in the module of its concept:
- `run_records`: a run's status, hash and history
- `interrupt_records`: a question, its states, close modes and refusal reasons
- `api_records`: the HTTP API's tokens, questions and deliveries
"""

from __future__ import annotations

from workers.store.api_records import (
    LOCAL_OWNER,
    TOKEN_OWNER,
    ApiQuestionRecord,
    ApiTokenRecord,
    TemporalTarget,
    WebhookState,
)
from workers.store.interrupt_records import (
    SHOWN_DIGEST,
    CloseMode,
    GroupState,
    InterruptRecord,
    InterruptState,
    RefusalReason,
    context_digest,
    message_fields,
    stored_request,
)
from workers.store.run_records import (
    FINAL_STATUSES,
    LIVE_STATUSES,
    STARTED,
    STARTED_FIELDS,
    HistoryEntry,
    RunRecord,
    RunStatus,
    with_start,
)

__all__ = [
    "FINAL_STATUSES",
    "LIVE_STATUSES",
    "LOCAL_OWNER",
    "SHOWN_DIGEST",
    "STARTED",
    "STARTED_FIELDS",
    "TOKEN_OWNER",
    "ApiQuestionRecord",
    "ApiTokenRecord",
    "CloseMode",
    "GroupState",
    "HistoryEntry",
    "InterruptRecord",
    "InterruptState",
    "RefusalReason",
    "RunRecord",
    "RunStatus",
    "TemporalTarget",
    "WebhookState",
    "context_digest",
    "message_fields",
    "stored_request",
    "with_start",
]
