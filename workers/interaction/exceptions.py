"""Errors the interaction port raises, and `ParleyError`, the root of all server-side errors.

The root lives here because the port imports only the standard library and pydantic.
`workers.exceptions` re-exports it as `workers.exceptions.ParleyError`.
"""

from __future__ import annotations


class ParleyError(Exception):
    """Base of every error Parley raises: the workers, the bot and its hosts, the CLI.

    Control-flow signals (`workers.exceptions.RunSignal`) are not errors and derive from
    `BaseException`. The Python API client (`parley.client`) has its own root, `ParleyAPIError`.
    That way it works without the rest of Parley. The tree::

        ParleyError
        ├── InteractionError                  the port (workers.interaction)
        │   ├── AnswerError                   answers that do not fit their request
        │   ├── ChoiceError                   a typed reply that names no single option
        │   ├── ContextError                  a context an answer cannot be bound to
        │   ├── QuestionExpired               nobody answered in time (on_expiry="fail")
        │   ├── PatternError                  a caller's pattern RE2 cannot compile
        │   └── ToolArgumentError             a model's ask_user arguments that cannot be used
        ├── ConfigError                       a missing or malformed setting
        │   └── LLMNotConfigured
        ├── RunNotFound
        ├── UnknownAgent
        │   └── AgentUnavailable              known, not loaded: an extra missing, a module broken
        ├── AgentError                        a run that cannot go on; no retry would fix it
        │   ├── SecretKeyMissing, SecretUnreadable, NotSerializable, NotInstalled
        │   ├── GraphNotDurable, GraphError   a LangGraph graph run_graph cannot run (workers.integrations)
        │   └── LLMRejected
        ├── AdminError                        an admin operation refused
        ├── AcceptRefused                     an answer not accepted (workers.runtime.acceptance)
        ├── ReassignRefused
        ├── SchemaUnusable                    a tool's input schema that cannot be checked against
        ├── TooManySteps                      a schema check over its step budget (workers.json_schemas)
        ├── LLMError                          a model call that failed (workers.llm)
        ├── ToolError                         a tool's message to the model (workers.llm)
        ├── QuestionError                     the HTTP API's questions (workers.questions)
        │   ├── QuestionNotFound, QuestionInvalid, QuestionConflict
        │   └── TokenError, DestinationRefused
        ├── ApiError, ToolInputError          the HTTP API's and the MCP server's bad input (bot)
        ├── BlockLimitError, StateError       Block Kit limits, a form state that cannot be read (bot.slack)
        └── CannotRun, SetupRefused, TokenRefused   the parley command line
    """


class InteractionError(ParleyError):
    """Base of every error the port raises."""


class AnswerError(InteractionError):
    """Answers that do not fit their request.

    `.errors` maps each item id to its problem. With `labels` (item id to label), the message names
    each item by its label: "Replicas: at most 10".
    """

    def __init__(self, errors: dict[str, str], labels: dict[str, str] | None = None) -> None:
        self.errors = dict(errors)
        self.labels = dict(labels or {})
        detail = "; ".join(f"{self.labels.get(k, k)}: {v}" for k, v in self.errors.items())
        super().__init__(f"invalid answers: {detail}")

    def worded(self) -> dict[str, str]:
        """Each refused item's problem, led by its label: {"replicas": "Replicas: at most 10"}."""
        return {k: f"{self.labels.get(k, k)}: {v}" for k, v in self.errors.items()}


class ChoiceError(InteractionError):
    """A typed reply that names no option, or more than one."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        self.candidates = candidates
        super().__init__(message)


class ContextError(InteractionError):
    """A context `run.ask` cannot bind an answer to, and nothing was recorded.

    It is not a JSON object, or it is too long.
    """


class QuestionExpired(InteractionError):
    """Raised by `run.ask` when nobody answered in time, under `on_expiry="fail"`."""

    def __init__(self, key: str, expired_at: float | None = None) -> None:
        self.key = key
        self.expired_at = expired_at
        super().__init__(f"question {key!r} expired without an answer")
