"""Every RQ job id Parley uses, built in one place.

A job id names one execution a run may get. So `unique=True` enqueues make each happen once,
however many processes ask. Those are a bot, a sweep or an admin.
"""

from __future__ import annotations


def first(run_id: str) -> str:
    """The run's first execution, enqueued when it is started."""
    return f"run-{run_id}"


def resume(run_id: str, interrupt_id: str) -> str:
    """The execution that resumes `run_id` after `interrupt_id` closes (answer or expiry)."""
    return f"resume-{run_id}-{interrupt_id}"


def show(interrupt_id: str) -> str:
    """Showing a group's answered question on its message, before the run resumes."""
    return f"show-{interrupt_id}"


def cancelled(run_id: str) -> str:
    """Showing an admin's cancel of `run_id`, and telling its webhook or workflow."""
    return f"cancelled-{run_id}"


def retry(run_id: str, epoch: int) -> str:
    """The retry after an execution at `epoch` raised.

    No other execution shares an epoch.
    """
    return f"retry-{run_id}-{epoch}"


def admin_retry(run_id: str, epoch: int) -> str:
    """An admin's retry of a failed or expired run last held at `epoch`."""
    return f"admin-retry-{run_id}-{epoch}"


def lapse(run_id: str, epoch: int) -> str:
    """The execution taking over a run whose lease at `epoch` lapsed."""
    return f"lapse-{run_id}-{epoch}"


def hand_back(run_id: str, epoch: int) -> str:
    """The execution taking over a run a stopped terminal handed back at `epoch`."""
    return f"handback-{run_id}-{epoch}"


def requeue(previous: str, now: float) -> str:
    """A fresh job for a queued run whose job `previous` ended or was abandoned."""
    return f"{previous}-s{int(now)}"


def sweep(slot: int) -> str:
    """The sweep of one slot of the time grid."""
    return f"parley-sweep-{slot}"


def of_run(run_id: str, interrupt_ids: list[str], epoch: int, current: str = "") -> list[str]:
    """Every job id run `run_id` could have had, to delete its job records.

    These are its first execution, a resume per question and its cancel's effects. Per epoch
    reached, they add a retry, a lapse, a hand-back and an admin's retry. Its current job comes
    last, maybe a `requeue` of one of those.
    """
    ids = [first(run_id), *(resume(run_id, iid) for iid in interrupt_ids), cancelled(run_id)]
    for e in range(epoch + 1):
        ids += [retry(run_id, e), lapse(run_id, e), hand_back(run_id, e), admin_retry(run_id, e)]
    if current and current not in ids:
        ids.append(current)
    return ids


def webhook(question_id: str, event: str) -> str:
    """The delivery of one webhook event of an API question, retried under one id."""
    return f"webhook-{question_id}-{event}"


def signal(question_id: str) -> str:
    """The delivery of an API question's outcome to its Temporal workflow.

    It is retried under the same id.
    """
    return f"signal-{question_id}"
