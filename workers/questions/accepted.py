"""An API question's webhook or Temporal signal, announced as its answer is accepted.

A question's outcome is known the moment its answer is accepted. The answers are in the closed
record, and nothing the run does next changes them. So the process that accepted the answer
announces the outcome right then. This takes the run's resume out of the time to the receiver
or workflow. The resume costs a queue hop, the claim and the message's lock. A webhook is still
one job on the webhooks' queue, so a stuck receiver delays no run. A Temporal signal is sent by
this process at once, off the ack, with its job as the fallback (`signals`, `signal_direct`).

A quorum's outcome is known once the answer that completes its group is accepted. It holds each
answering person's own answers, as the run returns them (`ask_each`). A group with an expired
member is left to the run, whose own rules decide how that ends.

Each outcome is announced once: `webhooks.announce` and `signals.announce` skip one already
recorded. The resume still announces too, as the fallback should this fail, but then sends
nothing more.
"""

from __future__ import annotations

import json

from workers.interaction import AnswerValue, answers_to_values
from workers.questions import signals, webhooks
from workers.questions.agent import KEY
from workers.runtime.wiring import Runtime
from workers.store.answered import read_answered, read_completed
from workers.store.groups import GroupMode
from workers.store.records import ApiQuestionRecord, InterruptRecord, InterruptState, RunRecord, RunStatus


def announce_accepted(runtime: Runtime, run_id: str, interrupt_id: str) -> bool:
    """Announce the outcome of the API question `run_id` just answered.

    False when it has none to send.
    """
    question, run, interrupt = read_answered(runtime.redis, run_id, interrupt_id)
    if question is None or question.quorum is not None or not (question.callback_url or question.temporal):
        return False
    if run is None or interrupt is None or interrupt.group or interrupt.state is not InterruptState.ANSWERED:
        return False
    if run.interrupt != interrupt_id:
        return False  # an earlier question of the run: its outcome is not the question's
    signalled = question.temporal is not None and signals.announce(runtime, run, interrupt, question=question)
    posted = bool(question.callback_url) and webhooks.announce(runtime, run, interrupt, question=question)
    return signalled or posted


def announce_quorum(runtime: Runtime, run_id: str, group_id: str) -> bool:
    """Signal the outcome of quorum question `run_id`, whose group an answer just completed.

    False when it has none to send, or leaves it to the run.
    """
    question, run, group, members = read_completed(runtime.redis, run_id, group_id)
    if question is None or question.quorum is None or question.temporal is None or question.signal is not None:
        return False
    if run is None or run.interrupt != group_id or group is None or group.mode is not GroupMode.EACH:
        return False
    answers_by = each_answers(members)
    if answers_by is None:
        return False
    return _signal_quorum(runtime, run, question, answers_by)


def each_answers(members: list[InterruptRecord]) -> dict[str, dict[str, AnswerValue]] | None:
    """Each answering person's own answers, as `ask_each` returns them.

    None when a member expired: the run decides how that ends.
    """
    if any(m.state is InterruptState.EXPIRED for m in members):
        return None
    return {
        m.answered_by: answers_to_values(m.request, m.answers) for m in members if m.state is InterruptState.ANSWERED
    }


def _signal_quorum(
    runtime: Runtime, run: RunRecord, question: ApiQuestionRecord, answers_by: dict[str, dict[str, AnswerValue]]
) -> bool:
    result = json.dumps(answers_by, ensure_ascii=False)  # the run's result, as the question agent writes it
    ending = run.model_copy(update={"status": RunStatus.SUCCEEDED, "result": result})
    return signals.announce(runtime, ending, None, question=question)


def install(runtime: Runtime) -> None:
    """Announce API questions' outcomes as their answers are accepted, in this process."""

    def on_accepted(interrupt: InterruptRecord) -> None:
        if interrupt.key != KEY:  # an agent's question, not an API question's own: no read
            return
        if interrupt.group:
            announce_quorum(runtime, interrupt.run_id, interrupt.group)
        else:
            announce_accepted(runtime, interrupt.run_id, interrupt.id)

    runtime.on_accepted.append(on_accepted)
