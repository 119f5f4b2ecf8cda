"""Questions asked from outside Parley's workers: the service behind the HTTP API and MCP.

An API question is a run of the built-in, unlisted `question` agent. Its body is one
`run.ask(request, context=...)`. Its id is the run's id, and its origin the caller's name.
Posting, validation, accepting once, expiry and reminders are the runs' own. So are the inbox
and the audit history. `QuestionService` (create, get, list, wait, cancel, confirm) works
in-process without HTTP. `webhooks` signs and delivers the callbacks.
"""

from workers.questions.config import QuestionConfig
from workers.questions.service import Caller, QuestionService

__all__ = ["Caller", "QuestionConfig", "QuestionService"]
