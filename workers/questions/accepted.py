"""An API question's webhook or Temporal signal, queued as its answer is accepted.

A question's outcome is known the moment its answer is accepted: the answers are in the
closed record, and nothing the run does next changes them. Queueing the delivery then,
from the process that accepted the answer, takes the run's resume (a queue hop, the claim,
the message's lock) out of the time to the receiver or the workflow: the delivery is one
job on the webhooks' queue, as before, so a stuck receiver still delays no run.

Each outcome is announced once (`webhooks.announce` and `signals.announce` skip one
already recorded), so the resume's own announcement, kept as the fallback should this one
fail, sends nothing more. A quorum's answer is announced as its run ends (`signals.ended`),
and the question of a group closes with its group, so both are left to the run.
"""

from __future__ import annotations

from workers.questions import signals, webhooks
from workers.questions.agent import KEY
from workers.runtime.wiring import Runtime
from workers.store.questions import QuestionStore
from workers.store.records import InterruptRecord, InterruptState


def announce_accepted(runtime: Runtime, run_id: str, interrupt_id: str) -> bool:
    """Queue the outcome of the API question `run_id` just answered; False when it has none to send."""
    question = QuestionStore(runtime.redis).get(run_id)
    if question is None or question.quorum is not None or not (question.callback_url or question.temporal):
        return False
    run = runtime.store.find(run_id)
    interrupt = runtime.store.interrupt(interrupt_id)
    if run is None or interrupt is None or interrupt.group or interrupt.state is not InterruptState.ANSWERED:
        return False
    if run.interrupt != interrupt_id:
        return False  # an earlier question of the run: its outcome is not the question's
    signalled = question.temporal is not None and signals.announce(runtime, run, interrupt, question=question)
    posted = bool(question.callback_url) and webhooks.announce(runtime, run, interrupt, question=question)
    return signalled or posted


def install(runtime: Runtime) -> None:
    """Announce API questions' outcomes as their answers are accepted, in this process."""

    def on_accepted(interrupt: InterruptRecord) -> None:
        if interrupt.key == KEY and not interrupt.group:  # an API question's own: no read for an agent's
            announce_accepted(runtime, interrupt.run_id, interrupt.id)

    runtime.on_accepted.append(on_accepted)
