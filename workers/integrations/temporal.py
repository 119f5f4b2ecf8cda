"""Temporal workflows ask people through Parley: `ask`, `approve` and `ask_each`, awaited in a workflow.

    from workers.integrations import temporal as parley_temporal

    @workflow.defn
    class Refund:
        @workflow.run
        async def run(self, amount: int) -> bool:
            decision = await parley_temporal.approve("Refund", {"amount": amount}, channel="C0BILLING")
            return decision.approved

Each call is deterministic workflow code. An activity posts the question through Parley's HTTP
API. That is `ParleyActivities`, registered on the worker with a `parley.client.Parley`. It
names this workflow (id and namespace) as the question's delivery target. The question's key is
drawn from the workflow's deterministic random. It is the activity's Idempotency-Key, so a
retried activity never posts twice.

The workflow then waits on the `parley_outcome` signal. A Parley worker sends it when the
question ends: answered, expired, cancelled or failed. It retries until Temporal accepts it
(`workers.questions.signals`). The activity returns the id of the question it created. The
signal names its question. An outcome for the key from any other question is ignored and logged.
Such a question might be another token's, naming this workflow. The first outcome of its own
question is kept, so the workflow sees each outcome once. Several asks at once
(`asyncio.gather`) are independent questions.

Cancelling the workflow, or the task awaiting the call, cancels the question in Parley first.
Its Slack message is locked as cancelled. Then the cancellation goes on. A question cancelled in
Slack, or with `parley runs cancel`, returns a `QuestionOutcome` with status `cancelled`. A
timed-out workflow runs no code to cancel its question, so a question expires no later than
the workflow's run or execution timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from workers.interaction.renamed import renamed

with workflow.unsafe.imports_passed_through():
    from workers.integrations.temporal_decision import Decision
    from workers.interaction import Request
    from workers.interaction.models import DELAY_MAX

__all__ = [
    "SIGNAL",
    "Decision",
    "ParleyActivities",
    "ParleyClient",
    "QuestionOutcome",
    "approve",
    "ask",
    "ask_each",
]

SIGNAL = "parley_outcome"
"""The signal Parley sends a waiting workflow (`workers.questions.signals.SIGNAL`)."""
POST = "parley_post_question"
POST_APPROVAL = "parley_post_approval"
CANCEL = "parley_cancel_question"
ACTIVITY_TIMEOUT = timedelta(seconds=30)
ACTIVITY_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))
REFUSED = "ParleyRefused"
"""The error type of an activity Parley answered with an error no retry would change (4xx but 408/429)."""


@dataclass(frozen=True)
class QuestionOutcome:
    """How a question ended: `answered`, `expired`, `cancelled` or `failed`.

    `answered` comes with `answers`, and who gave them in `by`. When expired under
    `on_expiry="use_defaults"`, `answers` holds the items' defaults.
    """

    question_id: str
    status: str
    answers: dict[str, Any] | None = None
    by: str | None = None
    answered_at: str | None = None
    answers_by: dict[str, dict[str, Any]] | None = None
    """With `ask_each`: each person's own answers, by user id."""
    cancelled_by: str | None = None
    error: str | None = None
    decision: dict[str, Any] | None = field(default=None, repr=False)
    receipt: dict[str, Any] | None = field(default=None, repr=False)
    """The signed receipt of how it ended (docs/receipts.md), where Parley signs receipts."""

    @property
    def answered(self) -> bool:
        return self.status == "answered"

    @classmethod
    def of(cls, payload: dict[str, Any]) -> QuestionOutcome:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in payload.items() if k in names})


# ---- inside the workflow -------------------------------------------------------------------------
class _Waits:
    """The outcomes this workflow run was signalled, by key and question id.

    A key's outcome counts only for the question its own activity created. Any token granted this
    workflow could ask a question naming the key. So another question's outcome is dropped and
    logged. An outcome may arrive before the activity's result, so it is held until then.
    """

    def __init__(self) -> None:
        self.outcomes: dict[str, dict[str, dict[str, Any]]] = {}
        self.keys: set[str] = set()  # the keys this run drew: an outcome for any other is not held
        self.questions: dict[str, str] = {}  # key -> the question id its activity returned
        self.ignored = 0

    def on_outcome(self, payload: dict[str, Any]) -> None:
        key = payload.get("key") if isinstance(payload, dict) else None
        qid = payload.get("question_id") if isinstance(payload, dict) else None
        if not isinstance(key, str) or not isinstance(qid, str):
            self._ignore("not an outcome of Parley's", key, qid)
            return
        if key not in self.keys:
            self._ignore("a key this workflow did not draw", key, qid)
            return
        held = self.outcomes.setdefault(key, {})
        if qid in held:
            self.ignored += 1  # a retried delivery of an outcome already kept
            return
        expected = self.questions.get(key)
        if expected is not None and qid != expected:
            self._ignore("another question's outcome", key, qid)
            return
        held[qid] = payload

    def expect(self, key: str, question_id: str) -> None:
        """`key` waits on `question_id`, its activity's question.

        Any other outcome held for it is dropped.
        """
        self.questions[key] = question_id
        for qid in [q for q in self.outcomes.get(key, {}) if q != question_id]:
            del self.outcomes[key][qid]
            self._ignore("another question's outcome", key, qid)

    def outcome(self, key: str) -> dict[str, Any] | None:
        expected = self.questions.get(key)
        return self.outcomes.get(key, {}).get(expected) if expected is not None else None

    def _ignore(self, why: str, key: object, question_id: object) -> None:
        self.ignored += 1
        if not workflow.in_workflow():  # a unit test's helper, outside any workflow: nothing to log under
            return
        info = workflow.info()
        workflow.logger.warning(
            "parley outcome ignored: %s (key %r, question %r, awaited %r; workflow_id %s, run_id %s)",
            why,
            str(key)[:300],
            str(question_id)[:300],
            self.questions.get(key) if isinstance(key, str) else None,
            info.workflow_id,
            info.run_id,
        )


def _waits() -> _Waits:
    """This workflow run's outcomes, and the signal handler filling them.

    The handler is set once, on first use.
    """
    instance = workflow.instance()
    waits = getattr(instance, "_parley_waits", None)
    if waits is None:
        waits = _Waits()
        setattr(instance, "_parley_waits", waits)  # noqa: B010 - on the user's workflow object, not ours
        workflow.set_signal_handler(SIGNAL, waits.on_outcome)
    return waits


def _target() -> dict[str, str]:
    """This workflow as a question's delivery target, under a new key.

    The key is deterministic, so replays draw the same.
    """
    info = workflow.info()
    key = f"tw-{workflow.uuid4()}"
    _waits().keys.add(key)
    return {"workflow_id": info.workflow_id, "namespace": info.namespace, "key": key}


async def _post(activity_name: str, body: dict[str, Any], key: str) -> str:
    """The id of the question the activity created.

    A cancel arriving meanwhile does not cancel the activity. Its question may exist already,
    with the activity's result not yet recorded. So the activity is awaited to its end under
    `asyncio.shield`. The question it created is cancelled, then the cancellation goes on.
    """
    created = workflow.start_activity(
        activity_name,
        args=[body, key],
        start_to_close_timeout=ACTIVITY_TIMEOUT,
        retry_policy=ACTIVITY_RETRY,
    )
    try:
        return str(await asyncio.shield(created))
    except asyncio.CancelledError:
        try:
            question_id = str(await created)
        except Exception:  # it created no question: nothing to cancel, the cancel goes on
            raise asyncio.CancelledError() from None
        await _cancel(question_id)
        raise


async def _cancel(question_id: str) -> None:
    """Cancel `question_id` in Parley, so its Slack message is locked as cancelled."""
    await workflow.execute_activity(
        CANCEL,
        question_id,
        start_to_close_timeout=ACTIVITY_TIMEOUT,
        retry_policy=RetryPolicy(maximum_attempts=5),
        cancellation_type=workflow.ActivityCancellationType.ABANDON,
    )


async def _wait(key: str, question_id: str) -> QuestionOutcome:
    """The outcome signalled for `key` by `question_id`, and no other question.

    `question_id` is the question this workflow's activity created. If cancelled, the question is
    cancelled in Parley first.
    """
    waits = _waits()
    waits.expect(key, question_id)
    try:
        await workflow.wait_condition(lambda: waits.outcome(key) is not None)
    except asyncio.CancelledError:
        await _cancel(question_id)
        raise
    outcome = waits.outcome(key)
    assert outcome is not None
    return QuestionOutcome.of(outcome)


def _expires_in(given: Any) -> Any:
    """`given` seconds, cut to what this workflow has left before its run or execution timeout.

    A workflow that times out runs no more code, so nothing would cancel its question, and people
    could answer it with nobody waiting. Expiring with the workflow locks it as expired instead. A
    limit past the longest expiry leaves `given` as it is; so does a value Parley will refuse.
    """
    info = workflow.info()
    limits = [t for t in (info.run_timeout, info.execution_timeout) if t]
    if not limits or (given is not None and (isinstance(given, bool) or not isinstance(given, int))):
        return given
    left = int((info.workflow_start_time + min(limits) - workflow.now()).total_seconds())
    if left > DELAY_MAX:
        return given
    return max(1, left) if given is None else min(given, max(1, left))


def _request(request: Request | dict[str, Any], **options: Any) -> dict[str, Any]:
    """The request as the API takes it, with `options` set, expiring no later than the workflow.

    Parley validates it, not the workflow, whose sandbox restricts what validation uses. A bad one
    fails the activity at once (`ParleyRefused`).
    """
    given = request.model_dump(mode="json", exclude_defaults=True) if isinstance(request, Request) else dict(request)
    given.update({k: v for k, v in options.items() if v is not None})
    expires_in = _expires_in(given.get("expires_in"))
    if expires_in is not None:
        given["expires_in"] = expires_in
    return given


async def ask(
    request: Request | dict[str, Any],
    *,
    assignees: Sequence[str] | None = None,
    channel: str | None = None,
    user: str | None = None,
    expires_in: int | None = None,
    thread_ts: str | None = None,
    context: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> QuestionOutcome:
    """Ask `request` in `channel`, or a DM with `user`, and durably await its end."""
    _waits()
    target = _target()
    body = {
        "request": _request(request, assignees=list(assignees) if assignees else None, expires_in=expires_in),
        "channel": channel,
        "user": user,
        "thread_ts": thread_ts,
        "context": context,
        "metadata": metadata,
        "temporal": target,
    }
    question_id = await _post(POST, body, target["key"])
    return await _wait(target["key"], question_id)


async def ask_each(
    request: Request | dict[str, Any],
    assignees: Sequence[str],
    *,
    quorum: int | None = None,
    channel: str | None = None,
    expires_in: int | None = None,
    context: dict[str, Any] | None = None,
) -> QuestionOutcome:
    """Put `request` to each of `assignees` separately, with one outcome.

    The outcome comes when `quorum` of them answered, by default all. `answers_by` holds each one's
    own answers.
    """
    _waits()
    target = _target()
    body = {
        "request": _request(request, assignees=list(assignees), expires_in=expires_in),
        "channel": channel,
        "quorum": quorum or len(assignees),
        "context": context,
        "temporal": target,
    }
    question_id = await _post(POST, body, target["key"])
    return await _wait(target["key"], question_id)


async def approve(
    action: str,
    args: dict[str, Any],
    *,
    channel: str,
    schema: dict[str, Any] | None = None,
    editable: bool | list[str] = True,
    assignees: Sequence[str] | None = None,
    expires_in: int | None = None,
) -> Decision:
    """Ask to approve `action` with `args`, and wait for the `Decision`.

    The editable args may be edited first. A question ending unanswered (expired, cancelled, failed)
    is not an approval. The decision is then `approved=False`, with the proposed args and a reason
    saying how it ended. `by` is empty. Its `receipt` is the signed receipt the signal carried.
    """
    _waits()
    target = _target()
    body = {
        "channel": channel,
        "action": action,
        "args": args,
        "schema": schema,
        "editable": editable,
        "assignees": list(assignees) if assignees else None,
        "expires_in": _expires_in(expires_in),
        "temporal": target,
    }
    question_id = await _post(POST_APPROVAL, body, target["key"])
    outcome = await _wait(target["key"], question_id)
    if outcome.answered and outcome.decision is not None:
        return Decision.model_validate({**outcome.decision, "receipt": outcome.receipt})
    reason = f"not decided: the approval {outcome.status}"
    return Decision(approved=False, args=args, reason=reason, receipt=outcome.receipt)


# ---- on the worker: the activities ---------------------------------------------------------------
class ParleyClient(Protocol):
    """What the activities need of `parley.client.Parley` (which `workers` may not import)."""

    @property
    def submit(self) -> Callable[..., str]: ...

    @property
    def submit_approval(self) -> Callable[..., str]: ...

    @property
    def cancel(self) -> Callable[[str], Any]: ...


class ParleyActivities:
    """The activities `ask`, `approve` and `ask_each` run.

    Register `activities()` on the Temporal worker. They call Parley's HTTP API with `parley`, a
    `parley.client.Parley` holding an `ask` token. Each runs on a thread, so the worker's event loop
    is never blocked. An error answer no retry would change fails the activity for good, as
    `ParleyRefused`. That is any 4xx but 408 and 429, like a bad request or an unpostable channel.
    Anything else is retried with backoff.
    """

    def __init__(self, parley: ParleyClient) -> None:
        self.parley = parley

    def activities(self) -> list[Any]:
        return [self.post_question, self.post_approval, self.cancel_question]

    @activity.defn(name=POST)
    async def post_question(self, body: dict[str, Any], key: str) -> str:
        fields = {k: v for k, v in body.items() if k != "request" and v is not None}
        return await _call(lambda: self.parley.submit(body["request"], idempotency_key=key, **fields))

    @activity.defn(name=POST_APPROVAL)
    async def post_approval(self, body: dict[str, Any], key: str) -> str:
        return await _call(lambda: self.parley.submit_approval(body, idempotency_key=key))

    @activity.defn(name=CANCEL)
    async def cancel_question(self, question_id: str) -> None:
        try:
            await _call(lambda: self.parley.cancel(question_id))
        except ApplicationError as exc:
            if exc.type != REFUSED:
                raise
            activity.logger.info("question %s had ended already: %s", question_id, exc)  # nothing to cancel


async def _call(fn: Any) -> Any:
    try:
        return await asyncio.to_thread(fn)
    except Exception as exc:
        status = getattr(exc, "status", None)  # parley.client.ParleyAPIError
        if isinstance(status, int) and 400 <= status < 500 and status not in (408, 429):
            raise ApplicationError(str(exc), type=REFUSED, non_retryable=True) from None
        raise


_RENAMED = {"Outcome": "QuestionOutcome"}  # deprecated name -> its new name


def __getattr__(name: str) -> Any:
    """An old name, importable for a while with a DeprecationWarning."""
    return renamed(__name__, name, _RENAMED, globals())
