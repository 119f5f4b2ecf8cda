"""`run.ask`'s mechanics: one question, put once, answered once, replayed from the store.

Replay walks the key's attempts (`attempts.AttemptWalk`). An answered attempt returns its
answers, unless its facts changed. An open one is put to people again, and a host posts it once.
With no attempt left, a new question opens. A pause/resume host parks the run (`Suspend`). A
synchronous host answers at once, and the answers are recorded like any answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from workers import metrics
from workers.exceptions import SecretKeyMissing, StaleEpoch
from workers.interaction import AnswerValue, Context, OnExpiry, QuestionExpired, Request, answers_to_values
from workers.interaction.context import as_given, canonical
from workers.runtime.attempts import AttemptWalk
from workers.runtime.execution import Execution
from workers.runtime.host_view import HostView
from workers.store import ids
from workers.store import journal_names as names
from workers.store.records import InterruptRecord, InterruptState


@dataclass
class Asked:
    """What one `ask` returned: answers by item id, and what the author's API keeps."""

    key: str
    values: dict[str, AnswerValue]
    answered: InterruptRecord | None = None  # the question answered, with who answered it
    secrets: dict[str, str] = field(default_factory=dict)  # secret items' values, for `run.secret`


def ask(run: Execution, request: Request, key: str | None, context: Context | None) -> Asked:
    """Put `request` to people under ask key `key` (numbered when None).

    See `Run.ask`.
    """
    run.not_parked()
    if request.has_secret and run.store.box is None:
        raise SecretKeyMissing()
    bound = canonical(context) if context is not None else ""  # refused here, before anything is recorded
    shown = as_given(context) if context is not None else ""
    facts: Context | None = json.loads(shown) if shown else None
    key = run.keys.key(key)
    walk = AttemptWalk(run, key)
    for n, iid in walk:
        interrupt = run.read_interrupt(iid)
        if interrupt is None:
            raise walk.missing(n)
        if interrupt.state is InterruptState.ANSWERED:
            if walk.void(interrupt, bound, facts):
                continue
            opened = _secrets(run, interrupt)
            if opened is None:
                continue  # its secrets were deleted when the run ended once; ask again
            values = answers_to_values(interrupt.request, interrupt.answers)
            return Asked(key, {**values, **{k: v for k, v in opened.items() if k in values}}, interrupt, opened)
        if interrupt.state is InterruptState.EXPIRED:
            if interrupt.request.on_expiry is OnExpiry.USE_DEFAULTS:
                return Asked(key, answers_to_values(interrupt.request, interrupt.answers))
            raise QuestionExpired(key, interrupt.expires_at)
        if interrupt.state is InterruptState.CANCELLED:
            raise StaleEpoch(run.run_id, run.epoch)
        return _solicit(run, interrupt, opened_earlier=True)
    anyone = run.conversation.get("anyone") or request.claim  # open to the whole channel; a claim picks one
    if not request.assignees and not anyone:
        request = request.model_copy(update={"assignees": [run.started_by]})
    attempts, voided = [*walk.attempts, ids.new_question_id()], walk.voided
    assignees = list(request.assignees)
    new = run.durable(
        lambda: run.store.open_interrupt(
            run.record, run.epoch, key, attempts, request, assignees, context=shown, changes=voided
        ),
        "open a question",
    )
    run.noted({names.ask(key): attempts})
    metrics.QUESTIONS_ASKED.inc()
    return _solicit(run, new, opened_earlier=False)


def _secrets(run: Execution, interrupt: InterruptRecord) -> dict[str, str] | None:
    """An answered question's secret values, opened, or None once no longer held."""
    if not any(a.is_secret for a in interrupt.answers):
        return {}
    iid, run_id = interrupt.id, run.run_id
    opened = run.read(lambda: run.store.secret_answers(run_id, iid), "read a secret answer")
    if opened is None:
        run.log.info("secret answer no longer held; asking again", key=interrupt.key)
    return opened


def _solicit(run: Execution, interrupt: InterruptRecord, *, opened_earlier: bool) -> Asked:
    """Put the open question to people.

    A synchronous host answers now. Otherwise the run parks.
    """
    run.log = run.log.bind(interrupt_id=interrupt.id)
    view = HostView(run, interrupt, opened_earlier=opened_earlier)
    outcome = run.host.solicit(interrupt.request, view)
    if not outcome.paused:
        answers = interrupt.request.validate_answers(outcome.answers)
        run.durable(
            lambda: run.store.close_synchronously(interrupt, answers, by=run.started_by, epoch=run.epoch),
            "record the answers",
        )
        answered = interrupt.model_copy(update={"answers": answers, "answered_by": run.started_by})
        secrets = {a.id: a.secret for a in answers if a.secret is not None}
        return Asked(interrupt.key, answers_to_values(interrupt.request, answers), answered, secrets)
    parked = view.interrupt  # with where the host posted it, and who it asks
    run.durable(lambda: run.store.park(run.run_id, run.epoch, parked), "park")
    run.log.info("paused", key=interrupt.key, attempt=interrupt.attempt, assignees=interrupt.assignees)
    run.suspend(interrupt.id)
