"""`QuestionService`: create, read, list, wait on, cancel and confirm questions in-process.

The HTTP API is a thin layer over this. An MCP server, or any caller in a Parley process, uses
it directly. It brings a `Caller` of its own. Every call but `wait` is synchronous and short.
`wait` is a coroutine that holds no thread while it waits. A create's checks are
`admission`, and the reads are `reads`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from workers.exceptions import AdminError, ConfigError, RunNotFound
from workers.interaction.context import canonical, changes, digest
from workers.logs import Log
from workers.questions.admission import QuestionAdmission, body_digest, field_error
from workers.questions.caller import Caller
from workers.questions.channels import NO_SUCH_CHANNEL, ChannelNames, where_to_post
from workers.questions.config import QuestionConfig
from workers.questions.exceptions import (
    QuestionConflict,
    QuestionInvalid,
)
from workers.questions.models import (
    DECLINABLE,
    ELICITATION,
    ConfirmResult,
    QuestionCreate,
    QuestionStatus,
    QuestionView,
)
from workers.questions.reads import QuestionReads
from workers.questions.waiting import Waiting
from workers.questions.webhooks import DestinationRefused, check_destination
from workers.runs.start import begin
from workers.runtime import admin
from workers.runtime.wiring import Runtime
from workers.store import ids
from workers.store.closings import Closings
from workers.store.idempotency import Binding
from workers.store.questions import QuestionStore, UnreadableQuestion
from workers.store.records import (
    ApiQuestionRecord,
    GroupState,
    TemporalTarget,
)
from workers.store.runs import new_id

AGENT = "question"
HOST = "api"
T = TypeVar("T")
QUORUM_FIRST_READ, QUORUM_LAST_READ = 0.02, 1.0
"""Seconds between reads of a quorum's run once its group has ended: doubling, capped."""
log = Log("parley.questions")


class QuestionService(QuestionAdmission, QuestionReads):
    """Create, read, list, wait on, cancel and confirm questions, for the API and MCP."""

    def __init__(
        self,
        runtime: Runtime,
        config: QuestionConfig | None = None,
        *,
        team: str = "",
        channels: ChannelNames | None = None,
        closings: Closings | None = None,
    ) -> None:
        self.runtime = runtime
        self.closings = closings  # wakes `wait`; the process's composition root starts and stops it
        self.waiting = Waiting(self)  # how an MCP call asks and waits
        self.store = QuestionStore(runtime.redis)
        self.config = config or QuestionConfig()
        self.team = team  # the Slack workspace questions are asked in, when known
        self.channels = channels  # `#name` to an id, and the channels a refusal lists; None: ids only
        self._limiter: anyio.CapacityLimiter | None = None

    # ---- create ----------------------------------------------------------------
    def create(
        self, caller: Caller, body: QuestionCreate, idempotency_key: str | None = None
    ) -> tuple[QuestionView, bool]:
        """Ask `body.request` in Slack, posted before this returns.

        Returns the question and whether it was created. False means an earlier request made it, with
        the same Idempotency-Key and body.
        """
        if body.callback_url:
            try:
                check_destination(body.callback_url, self.config.webhook_allow, self.config.webhook_loopback)
            except DestinationRefused as exc:
                raise QuestionInvalid(str(exc), [field_error(["callback_url"], str(exc))]) from None
        if body.temporal is not None:
            self._check_temporal(caller, body)
        body = self._channel_by_id(caller, body)
        binding: Binding | None = None
        if idempotency_key is not None:
            if not 1 <= len(idempotency_key) <= 255:
                raise QuestionInvalid("Idempotency-Key must be 1 to 255 characters")
            binding = Binding(
                caller.owner,
                hashlib.sha256(idempotency_key.encode()).hexdigest(),
                body_digest(body),
            )
        self._check_open(caller, binding)
        self._charge_notices(caller, body)
        qid = new_id("r")
        request = body.request
        if body.user and not request.assignees:
            request = request.model_copy(update={"assignees": [body.user]})  # a DM: that person answers
        conversation: dict[str, Any] = {
            "host": HOST,
            "channel": body.channel or body.user,
            "origin": caller.name,
            "via": caller.via,
        }
        team = caller.team or self.team
        if team.startswith("E"):  # an org-wide install answers for every workspace of the organisation
            conversation.update(enterprise=team, enterprise_install=True)
        elif team:
            conversation["team"] = team
        if body.thread_ts:
            conversation["thread_ts"] = body.thread_ts
        temporal = TemporalTarget.model_validate(body.temporal.model_dump()) if body.temporal is not None else None
        if temporal is not None:  # shown by Inspect and `parley runs show`
            conversation["temporal"] = {"workflow_id": temporal.workflow_id, "namespace": temporal.namespace}
        if ELICITATION in body.metadata:  # an MCP elicitation: people may decline it as well as answer it
            conversation[DECLINABLE] = True
        if not request.assignees:
            conversation["anyone"] = True  # anyone who can see the question in the channel may answer
        record = ApiQuestionRecord(
            id=qid,
            token=caller.name,
            channel=body.channel or "",
            user=body.user or "",
            thread_ts=body.thread_ts or "",
            callback_url=body.callback_url or "",
            metadata=body.metadata,
            request=request,
            context=body.context,
            created_at=time.time(),
            team=team,
            owner=caller.owner,
            temporal=temporal,
            quorum=body.quorum,
            whole_args=body.whole_args,
        )
        bound = self.store.create(record, AGENT, caller.name, conversation, binding)
        if bound is not None:  # the key made its question earlier: nothing written
            if not bound.same_body:
                raise QuestionConflict("this Idempotency-Key was used with another body")
            return self.get(caller, bound.question_id), False
        log.info("question created", run_id=qid, origin=caller.name, channel=conversation["channel"])
        try:
            begin(self.runtime, qid, inline=True)  # posts and parks; a failure to post is retried by a worker
        except Exception as exc:  # Redis down, full or refusing mid-way
            self._not_posted(record, binding, exc)
            raise
        view, _, question = self._view_and_question(self._record(caller, qid))
        if view.status is QuestionStatus.WAITING:
            self._refer(record, question)
        if view.status is QuestionStatus.FAILED:
            if binding is not None:
                self.store.release_idempotency(binding, qid)
            detail = f"the question could not be posted: {view.error}"
            if any(error in (view.error or "") for error in NO_SUCH_CHANNEL):
                detail += f"; {where_to_post(self.channels, team)}"
            raise QuestionInvalid(detail, [field_error([], view.error or "")])
        return view, True

    # ---- wait ------------------------------------------------------------------
    async def wait(self, caller: Caller, question_id: str, timeout: float) -> QuestionView:
        """The question once it leaves `waiting`, or as it is after `timeout` seconds.

        The service's close notifications (`Closings`) wake it. No thread is held while it waits,
        only for each short read. A quorum's group publishes its close, but its answers are the
        run's result: in the moment between the two, short reads follow the run. An MCP call waits
        through `waiting`.
        """
        closings = self.closings
        if closings is None:
            raise ConfigError("this question service was built without close notifications (`closings`)")
        timeout = max(0.0, min(timeout, float(self.config.max_wait)))
        record = await self.in_thread(lambda: self._record(caller, question_id))
        view, iid = await self.in_thread(lambda: self._view(record))
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + timeout, QUORUM_FIRST_READ
        while view.status is QuestionStatus.WAITING:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            if ids.is_group(iid) and await self.in_thread(partial(self._group_ended, iid)):
                await asyncio.sleep(min(pause, remaining))  # the run's last step, after the quorum
                pause = min(pause * 2, QUORUM_LAST_READ)
            else:
                await self._closed(closings, iid or question_id, record, remaining)
            view, iid = await self.in_thread(lambda: self._view(record))
        if view.status is not QuestionStatus.WAITING and self.runtime.receipts.signer is not None:
            await self.in_thread(lambda: self._receipts_first(view))  # a thread hop only when it writes
        return view

    async def _closed(
        self, closings: Closings, watched: str, record: ApiQuestionRecord | UnreadableQuestion, remaining: float
    ) -> None:
        """Return once `watched` closes, or after `remaining` seconds."""
        fut = closings.watch(watched)
        try:
            view, _ = await self.in_thread(lambda: self._view(record))  # closed while we subscribed?
            if view.status is QuestionStatus.WAITING:
                await asyncio.wait_for(asyncio.shield(fut), remaining)
        except TimeoutError:
            pass
        finally:
            closings.forget(watched, fut)

    def _group_ended(self, gid: str) -> bool:
        """Whether a quorum's group has ended, leaving its run to finish."""
        group = self.runtime.store.groups.group(gid)
        return group is not None and group.state is not GroupState.OPEN

    async def in_thread(self, fn: Callable[[], T]) -> T:
        """Run a short store read on the service's threads, never Slack's ack threads."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(16)
        return await anyio.to_thread.run_sync(fn, limiter=self._limiter)

    # ---- cancel and confirm ----------------------------------------------------
    def cancel(self, caller: Caller, question_id: str) -> QuestionView:
        """Close a waiting question as cancelled and lock its message.

        409 when it has closed already.
        """
        self._readable(caller, question_id)
        for _ in range(3):  # a worker that took the run meanwhile: try again as it now stands
            try:
                admin.cancel(self.runtime, question_id, by=caller.name, waiting_only=True)
                return self.get(caller, question_id)
            except (AdminError, RunNotFound) as exc:
                view = self.get(caller, question_id)
                if view.status is not QuestionStatus.WAITING:
                    raise QuestionConflict(
                        f"the question is {view.status.value}; only a waiting question can be cancelled"
                    ) from exc
        raise QuestionConflict("the question changed while it was being cancelled; try again")

    def confirm(self, caller: Caller, question_id: str, context: dict[str, Any] | None) -> ConfirmResult:
        """Whether `context` holds the facts the question was asked and answered on.

        Otherwise 409, listing each change.
        """
        record = self._readable(caller, question_id)
        try:
            now = canonical(context) if context is not None else ""
        except Exception as exc:  # ContextError: not JSON, or too long
            raise QuestionInvalid(str(exc), [field_error(["context"], str(exc))]) from None
        then = canonical(record.context) if record.context is not None else ""
        view = self.get(caller, question_id)
        if now != then:
            found = changes(record.context, context)
            raise QuestionConflict(
                "the facts changed since the question was asked: "
                + ", ".join(f"{c.field} ({c.kind.value})" for c in found),
                changes=[c.model_dump(mode="json") for c in found],
                question_status=view.status.value,
            )
        return ConfirmResult(id=question_id, status=view.status, context_digest=digest(then))
