"""What a run's writes are made of: hashes, history lines and script arguments.

`RunStore` sends them. The bench's seeding and a few callers use them directly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from workers.interaction import ContextChange, Request
from workers.store import job_ids, keys
from workers.store.interrupt_records import InterruptState, message_fields, stored_request
from workers.store.pieces import spread
from workers.store.run_records import HistoryEntry, RunStatus


def stage_create(
    pipe: Any, run_id: str, agent: str, text: str, started_by: str, conversation: dict[str, Any], now: float
) -> dict[str, str]:
    """Queue on `pipe` every write creating a queued run, returning its hash.

    Benchmarks also use it for seeding.
    """
    record = {
        "id": run_id,
        "agent": agent,
        "text": text,
        "started_by": started_by,
        **spread("conversation", json.dumps(conversation)),
        "status": RunStatus.QUEUED.value,
        "created_at": repr(now),
        "updated_at": repr(now),
        "epoch": "0",
        "failures": "0",
        "job": job_ids.first(run_id),
    }
    pipe.hset(keys.run(run_id), mapping=record)
    pipe.zadd(keys.status_index(RunStatus.QUEUED), {run_id: now})
    pipe.zadd(keys.all_runs_index(), {run_id: now})
    # no history entry: the history's start is the hash (`run_records.with_start`)
    return record


def interrupt_fields(
    iid: str,
    run_id: str,
    team: str,
    key: str,
    attempt: int,
    request: Request,
    assignees: list[str],
    now: float,
    *,
    context: str = "",
    changes: list[ContextChange] | None = None,
    standing_in: dict[str, list[dict[str, float | str]]] | None = None,
) -> dict[str, str]:
    """The hash of a question about to be posted, with the facts bound to it.

    Its state is `posting`.
    """
    expires_in = request.expires_in
    bound = (
        spread("context", context) if context else {}
    )  # its digest is read from it (`interrupt_records.context_digest`)
    if changes:
        bound.update(spread("context_changes", json.dumps([c.model_dump(mode="json") for c in changes])))
    if standing_in:
        bound["standing_in"] = json.dumps(standing_in)
    return {
        **bound,
        "id": iid,
        "run_id": run_id,
        "key": key,
        "attempt": str(attempt),
        **spread("request", stored_request(request)),
        "assignees": json.dumps(assignees),
        "asked_at": repr(now),
        "expires_at": repr(now + expires_in) if expires_in else "",
        **_reminders(request, now),
        **_escalation(request, now),
        "state": InterruptState.POSTING.value,
        "team": team,
    }


def _reminders(request: Request, now: float) -> dict[str, str]:
    """When reminders are due: at half-life, then a last call before expiry.

    The last call comes a lead before expiry. If due before half-life, it is the only reminder. Two
    close together say nothing more.
    """
    if not request.expires_in:
        return {"remind_at": ""}
    half, lead = now + request.expires_in / 2, request.last_call_lead()
    if lead is None:
        return {"remind_at": repr(half)}
    last = now + request.expires_in - lead
    return {"remind_at": repr(min(half, last)), "last_call_at": repr(last)}


def _escalation(request: Request, now: float) -> dict[str, str]:
    """When and to whom an unanswered question is escalated (`workers.store.people`)."""
    if request.escalate_after is None:
        return {}
    return {"escalate_at": repr(now + request.escalate_after), "escalate_to": json.dumps(request.escalate_to)}


def history_entry(event: str, by: str = "", **detail: Any) -> str:
    """One history line as stored, for `add_history` or a recording transition."""
    return HistoryEntry(at=time.time(), event=event, by=by, detail=detail).model_dump_json()


def _transition_keys(run_id: str) -> list[str]:
    return [keys.run(run_id), keys.leases_index(), keys.accepted_index(), keys.history(run_id)]


def park_call(
    run_id: str, epoch: int, now: float, interrupt_id: str, message: dict[str, Any]
) -> tuple[list[str], list[Any]]:
    """The PARK script's keys and arguments, for `RunStore.park` and the bench's seeding."""
    park_keys = [
        keys.run(run_id),
        keys.interrupt(interrupt_id),
        keys.leases_index(),
        keys.expiry_index(),
        keys.remind_index(),
        keys.escalate_index(),
    ]
    args = [run_id, keys.status_index(""), str(epoch), repr(now), interrupt_id, keys.waiting_index("")]
    return park_keys, [*args, *message_fields(message).values()]


def transition_call(
    run_id: str,
    allowed: Iterable[RunStatus],
    new: RunStatus,
    *,
    epoch: int | None = None,
    lease: str = "keep",
    bump_epoch: bool = False,
    failures: int = 0,
    history: str = "",
    journal: dict[str, Any] | None = None,
    now: float | None = None,
    **fields: Any,
) -> tuple[list[str], list[Any]]:
    """The KEYS and ARGV of one TRANSITION call (see `RunStore.transition`).

    It also serves a caller running the script itself, say in a pipeline.
    """
    argv: list[Any] = [  # in the order `scripts.TRANSITION` documents
        run_id,
        keys.status_index(""),
        " ".join(s.value for s in allowed),
        "" if epoch is None else str(epoch),
        new.value,
        repr(time.time() if now is None else now),
        lease,
        "1" if bump_epoch else "0",
        str(failures),
        history,
        json.dumps({k: json.dumps(v) for k, v in journal.items()}) if journal else "",
    ]
    for name, value in fields.items():
        argv += [name, value if isinstance(value, str) else json.dumps(value)]
    # The run's sealed secrets go too when it ends (TRANSITION's fifth key; CLAIM never ends a run).
    return [*_transition_keys(run_id), keys.secrets(run_id), keys.journal(run_id)], argv
