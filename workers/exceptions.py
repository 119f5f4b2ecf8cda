"""Errors and control-flow signals of the runtime.

Errors derive from `ParleyError` (its docstring draws the whole tree). The signals that end an execution early derive
from `RunSignal(BaseException)` so an agent's `except Exception` cannot swallow them;
the runtime catches them, and RQ never sees them as failures.
"""

from __future__ import annotations

# The root is defined by the port, which may import nothing of Parley's; it is this one.
from workers.interaction.exceptions import ParleyError as ParleyError


class ConfigError(ParleyError):
    """A missing or malformed setting; the message names the variable."""


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
    """An agent Parley knows of but could not load: an extra missing, or its module broken."""

    def __init__(self, name: str, reason: str, known: list[str]) -> None:
        self.name, self.known, self.reason = name, known, reason
        ParleyError.__init__(self, reason)


class AgentError(ParleyError):
    """A run that cannot go on for a reason no retry will fix (e.g. too many asks of one key)."""


class AdminError(ParleyError):
    """An admin operation refused: wrong status, unknown run, not an admin."""


class SecretKeyMissing(AgentError):
    """A secret item asked, or answered, where `PARLEY_SECRET_KEY` is not set; one line says so."""

    def __init__(self) -> None:
        super().__init__(
            "PARLEY_SECRET_KEY is not set, so a secret answer cannot be kept; set it to a Fernet key "
            "(python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
        )


class SecretUnreadable(AgentError):
    """A sealed secret answer this process's `PARLEY_SECRET_KEY` does not open (another key sealed it)."""


class NotSerializable(AgentError):
    """A `run.step` result that cannot be recorded as JSON."""


class RunSignal(BaseException):
    """Base of the signals that stop an execution without failing it."""


class Suspend(RunSignal):
    """The run asked a question and is parked; its RQ job ends as finished."""

    def __init__(self, run_id: str, interrupt_id: str) -> None:
        self.run_id = run_id
        self.interrupt_id = interrupt_id
        super().__init__(f"run {run_id} paused on {interrupt_id}")


class StaleEpoch(RunSignal):
    """This worker no longer owns the run (its lease lapsed, or the run was cancelled)."""

    def __init__(self, run_id: str, epoch: int) -> None:
        self.run_id = run_id
        self.epoch = epoch
        super().__init__(f"run {run_id}: epoch {epoch} is no longer current")


class NotInstalled(AgentError):
    """Parley has no installation (no bot token) for the workspace a run belongs to: it was
    uninstalled, or the run predates the install. No retry fixes that, so the run fails."""

    def __init__(self, team: str | None, enterprise: str | None = None) -> None:
        self.team, self.enterprise = team, enterprise
        where = f"workspace {team}" if team else f"organisation {enterprise}"
        super().__init__(f"Parley is not installed in {where}")
