"""Questions asked from outside Parley's workers: the service behind the HTTP API (and MCP).

An API question is a run of the built-in, unlisted `question` agent whose body is one
`run.ask(request, context=...)`; its id is the run's id and its origin the caller's name.
Posting, validation, accepting once, expiry, reminders, the inbox and the audit history are
the runs' own. `QuestionService` (create, get, list, wait, cancel, confirm) is callable
in-process without HTTP; `webhooks` signs and delivers the callbacks.
"""

from workers.questions.config import QuestionConfig
from workers.questions.service import Caller, QuestionService

__all__ = ["Caller", "QuestionConfig", "QuestionService"]
