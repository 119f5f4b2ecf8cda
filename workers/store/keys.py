"""Every Redis key Parley uses, built in one place from one prefix.

Listing always goes through the sorted-set indexes below; nothing on a request
path scans the keyspace.
"""

from __future__ import annotations

PREFIX = "parley:"


def run(run_id: str) -> str:
    """Hash: the run record (status, epoch, conversation, pending interrupt, ...)."""
    return f"{PREFIX}run:{run_id}"


def journal(run_id: str) -> str:
    """Hash: recorded results by replay key (`step:<k>`, `ask:<k>`, `say:<n>`)."""
    return f"{PREFIX}run:{run_id}:journal"


def history(run_id: str) -> str:
    """List: JSON entries of everything that happened to the run, oldest first."""
    return f"{PREFIX}run:{run_id}:history"


def secrets(run_id: str) -> str:
    """Hash: sealed secret answers by interrupt id (Fernet tokens); deleted when the run ends."""
    return f"{PREFIX}run:{run_id}:secrets"


def interrupt(interrupt_id: str) -> str:
    """Hash: one question put to people (request, assignees, state, answers)."""
    return f"{PREFIX}interrupt:{interrupt_id}"


def status_index(status: str) -> str:
    """Sorted set: run ids in `status`, scored by last update time."""
    return f"{PREFIX}idx:status:{status}"


def waiting_index(user: str) -> str:
    """Sorted set: interrupt ids waiting on `user`, scored by when they were asked."""
    return f"{PREFIX}idx:waiting:{user}"


def all_runs_index() -> str:
    """Sorted set: every run id, scored by creation time."""
    return f"{PREFIX}idx:runs"


def leases_index() -> str:
    """Sorted set: running run ids scored by when their worker's lease lapses."""
    return f"{PREFIX}idx:leases"


def expiry_index() -> str:
    """Sorted set: open interrupt ids scored by when they expire."""
    return f"{PREFIX}idx:expiry"


def remind_index() -> str:
    """Sorted set: open interrupt ids scored by when their assignees get a reminder."""
    return f"{PREFIX}idx:remind"


def accepted_index() -> str:
    """Sorted set: run ids queued by an accepted answer or a retry, awaiting a worker."""
    return f"{PREFIX}idx:accepted"


def thread(channel: str, thread_ts: str) -> str:
    """String: the run whose conversation is this thread (for answers typed as replies).

    Keyed by channel and thread alone: a Slack channel id names one conversation whichever
    team's envelope delivers its events (a shared channel's events may come under another
    organisation's team id), so the team plays no part in finding the thread.
    """
    return f"{PREFIX}thread:{channel}:{thread_ts}"


def seen_event(event_id: str) -> str:
    """String with a TTL: an event delivery already handled (Slack retries deliveries)."""
    return f"{PREFIX}seen:{event_id}"
