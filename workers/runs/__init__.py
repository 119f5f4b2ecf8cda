"""Runs as hosts see them: the inbound door (`RunService`) and its words.

`workers.interaction` is the port the runtime uses to reach a host (`Interactor`). This package
is the other direction. Slack, the terminal and the command line use `RunService` to handle
runs. They start, answer, decline, reassign, wait on and administer runs through it, never the
store. The records, outcomes and refusals it returns are exported here. So a host needs nothing
from `workers.store` or `workers.runtime`.
"""

from workers.runs.records import HostRecords, Notices, Proposals
from workers.runs.service import RunService, Where
from workers.runs.start import StartRefused
from workers.runtime.acceptance import AcceptRefused, AnswerOutcome, plain_text
from workers.runtime.admin import UNREADABLE, QuestionSummary, RunDetail, RunFilter, RunPage, RunSummary
from workers.runtime.claims import ClaimRefused
from workers.runtime.people import ReassignRefused
from workers.store.away import Away
from workers.store.closings import Closings
from workers.store.proposals import Proposal
from workers.store.records import HistoryEntry, InterruptRecord, InterruptState, RefusalReason, RunRecord, RunStatus
from workers.store.refusal import Refusal
from workers.store.slack_surfaces import SurfaceStore
from workers.store.starts import Admission, Rate, StartLimit, StartLimits

__all__ = [
    "UNREADABLE",
    "AcceptRefused",
    "Admission",
    "AnswerOutcome",
    "Away",
    "ClaimRefused",
    "Closings",
    "HistoryEntry",
    "HostRecords",
    "InterruptRecord",
    "InterruptState",
    "Notices",
    "Proposal",
    "Proposals",
    "QuestionSummary",
    "Rate",
    "ReassignRefused",
    "Refusal",
    "RefusalReason",
    "RunDetail",
    "RunFilter",
    "RunPage",
    "RunRecord",
    "RunService",
    "RunStatus",
    "RunSummary",
    "StartLimit",
    "StartLimits",
    "StartRefused",
    "SurfaceStore",
    "Where",
    "plain_text",
]
