"""Errors and control-flow signals of the runtime.

Errors derive from `ParleyError`, whose docstring draws the whole tree. Signals that end an
execution early derive from `RunSignal(BaseException)`. So an agent's `except Exception` cannot
swallow them. The runtime catches them, and RQ never sees them as failures.
"""

from __future__ import annotations

# The root is defined by the port, which may import nothing of Parley's; it is this one.
from workers.interaction.exceptions import ParleyError as ParleyError


class ConfigError(ParleyError):
    """A missing or malformed setting, named in the message."""


class RunNotFound(ParleyError):
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run {run_id!r}")


class UnknownAgent(ParleyError):
    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"unknown agent {name!r}; known agents: {', '.join(known) or 'none'}")


class AgentUnavailable(UnknownAgent):
    """An agent Parley knows but could not load: a missing extra, or a broken module."""

    def __init__(self, name: str, reason: str, known: list[str]) -> None:
        self.name, self.known, self.reason = name, known, reason
        ParleyError.__init__(self, reason)


class AgentError(ParleyError):
    """A run that cannot go on, for a reason no retry will fix.

    An example is too many asks of one key.
    """


class AdminError(ParleyError):
    """An admin operation refused: wrong status, unknown run, not an admin."""


class SecretKeyMissing(AgentError):
    """A secret item asked or answered without `PARLEY_SECRET_KEY` set.

    One line says so.
    """

    def __init__(self) -> None:
        super().__init__(
            "PARLEY_SECRET_KEY is not set, so a secret answer cannot be kept; set it to a Fernet key "
            "(python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
        )


class SecretUnreadable(AgentError):
    """A sealed secret answer this process's `PARLEY_SECRET_KEY` does not open.

    Another key sealed it.
    """


class NotSerializable(AgentError):
    """A `run.step` result that cannot be recorded as JSON."""


class RunSignal(BaseException):
    """Base of the signals that stop an execution without failing it."""


class Suspend(RunSignal):
    """The run asked a question and is parked, ending its RQ job as finished."""

    def __init__(self, run_id: str, interrupt_id: str) -> None:
        self.run_id = run_id
        self.interrupt_id = interrupt_id
        super().__init__(f"run {run_id} paused on {interrupt_id}")


class StaleEpoch(RunSignal):
    """This worker no longer owns the run.

    Its lease lapsed, or the run was cancelled.
    """

    def __init__(self, run_id: str, epoch: int) -> None:
        self.run_id = run_id
        self.epoch = epoch
        super().__init__(f"run {run_id}: epoch {epoch} is no longer current")


class NotInstalled(AgentError):
    """No installation (no bot token) for a run's workspace.

    It was uninstalled, or the run predates the install. No retry fixes that, so the run fails.
    """

    def __init__(self, team: str | None, enterprise: str | None = None) -> None:
        self.team, self.enterprise = team, enterprise
        where = f"workspace {team}" if team else f"organisation {enterprise}"
        super().__init__(f"Parley is not installed in {where}")
