"""`QuestionService`: create, read, list, wait on, cancel and confirm questions, in-process.

The HTTP API is a thin layer over this; an MCP server (or any other caller in a Parley
process) uses it directly with a `Caller` of its own. Every call but `wait` is
synchronous and short; `wait` is a coroutine that holds no thread while it waits.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from workers.exceptions import AdminError, RunNotFound
from workers.interaction.context import canonical, changes, digest
from workers.logs import Log
from workers.questions.config import QuestionConfig
from workers.questions.exceptions import QuestionConflict, QuestionInvalid, QuestionNotFound
from workers.questions.models import (
    ConfirmResult,
    QuestionCreate,
    QuestionPage,
    QuestionStatus,
    QuestionView,
    TokenScope,
)
from workers.questions.views import build_view
from workers.questions.webhooks import DestinationRefused, check_destination
from workers.runtime import admin
from workers.runtime.execute import execute
from workers.runtime.wiring import Runtime
from workers.store.closings import Closings
from workers.store.questions import QuestionStore
from workers.store.records import ApiQuestionRecord, ApiTokenRecord
from workers.store.runs import new_id

AGENT = "question"
HOST = "api"
T = TypeVar("T")
log = Log("parley.questions")


@dataclass(frozen=True)
class Caller:
    """Who asks: a token's name (the questions' origin) and what it may do."""

    name: str
    scopes: frozenset[str] = field(default_factory=lambda: frozenset({TokenScope.ASK.value}))
    team: str = ""  # the token's workspace: its questions are asked there, and an admin sees only those

    @property
    def admin(self) -> bool:
        return TokenScope.ADMIN.value in self.scopes

    @classmethod
    def of(cls, token: ApiTokenRecord) -> Caller:
        return cls(name=token.name, scopes=frozenset(token.scopes), team=token.team)


class QuestionService:
    def __init__(self, runtime: Runtime, config: QuestionConfig | None = None, *, team: str = "") -> None:
        self.runtime = runtime
        self.store = QuestionStore(runtime.redis)
        self.config = config or QuestionConfig()
        self.team = team  # the Slack workspace questions are asked in, when known
        self._limiter: anyio.CapacityLimiter | None = None

    # ---- create ----------------------------------------------------------------
    def create(
        self, caller: Caller, body: QuestionCreate, idempotency_key: str | None = None
    ) -> tuple[QuestionView, bool]:
        """Ask `body.request` in Slack; returns the question and whether it was created (False: an earlier
        request with the same Idempotency-Key and body made it). The question is posted before this returns."""
        if body.callback_url:
            try:
                check_destination(body.callback_url, self.config.webhook_allow)
            except DestinationRefused as exc:
                raise QuestionInvalid(str(exc), [_error(["callback_url"], str(exc))]) from None
        qid = new_id("r")
        key_digest = ""
        if idempotency_key is not None:
            if not 1 <= len(idempotency_key) <= 255:
                raise QuestionInvalid("Idempotency-Key must be 1 to 255 characters")
            key_digest = hashlib.sha256(idempotency_key.encode()).hexdigest()
            body_digest = hashlib.sha256(canonical(body.model_dump(mode="json")).encode()).hexdigest()
            bound = self.store.claim_idempotency(caller.name, key_digest, qid, body_digest)
            if bound["question_id"] != qid:
                if bound["body"] != body_digest:
                    raise QuestionConflict("this Idempotency-Key was used with another body")
                return self.get(caller, bound["question_id"]), False
        request = body.request
        if body.user and not request.assignees:
            request = request.model_copy(update={"assignees": [body.user]})  # a DM: that person answers
        conversation: dict[str, Any] = {"host": HOST, "channel": body.channel or body.user, "origin": caller.name}
        team = caller.team or self.team
        if team.startswith("E"):  # an org-wide install answers for every workspace of the organisation
            conversation.update(enterprise=team, enterprise_install=True)
        elif team:
            conversation["team"] = team
        if body.thread_ts:
            conversation["thread_ts"] = body.thread_ts
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
        )
        self.store.create(record, AGENT, caller.name, conversation)
        log.info("question created", run_id=qid, origin=caller.name, channel=conversation["channel"])
        execute(self.runtime, qid)  # posts and parks; a failure to post is retried by a worker
        view = self.get(caller, qid)
        if view.status is QuestionStatus.FAILED:
            if key_digest:
                self.store.release_idempotency(caller.name, key_digest, qid)
            raise QuestionInvalid(f"the question could not be posted: {view.error}", [_error([], view.error or "")])
        return view, True

    # ---- read ------------------------------------------------------------------
    def _record(self, caller: Caller, question_id: str) -> ApiQuestionRecord:
        record = self.store.get(question_id) if question_id.isascii() and len(question_id) < 100 else None
        if record is None or not _visible(caller, record):
            raise QuestionNotFound(f"no question {question_id!r}")
        return record

    def _view(self, record: ApiQuestionRecord) -> tuple[QuestionView, str]:
        run = self.runtime.store.find(record.id)
        interrupt = self.runtime.store.interrupt(run.interrupt) if run is not None and run.interrupt else None
        return build_view(record, run, interrupt), (run.interrupt if run is not None else "")

    def get(self, caller: Caller, question_id: str) -> QuestionView:
        return self._view(self._record(caller, question_id))[0]

    def list(
        self, caller: Caller, status: QuestionStatus | None = None, limit: int = 20, cursor: str | None = None
    ) -> QuestionPage:
        """The caller's questions (all of them for an admin), newest first; `cursor` from the page before."""
        limit = max(1, min(limit, 100))
        before = _cursor(cursor)
        found: list[QuestionView] = []
        next_cursor: str | None = None
        owner = None if caller.admin else caller.name
        while len(found) < limit:
            rows = self.store.page(owner, before, 100)
            if not rows:
                break
            for record in self.store.many(qid for qid, _ in rows):
                if not _visible(caller, record):
                    before = record.created_at
                    continue
                view = self._view(record)[0]
                if status is None or view.status is status:
                    found.append(view)
                before = record.created_at
                if len(found) == limit:
                    next_cursor = repr(before)
                    break
            if len(rows) < 100:
                break
        return QuestionPage(questions=found, next_cursor=next_cursor)

    # ---- wait ------------------------------------------------------------------
    async def wait(self, caller: Caller, question_id: str, timeout: float, closings: Closings) -> QuestionView:
        """The question once it leaves `waiting`, or after `timeout` seconds still waiting.

        Woken by the store's close notification (`Closings`), never by polling; no thread is
        held while it waits, only for each short read.
        """
        timeout = max(0.0, min(timeout, float(self.config.max_wait)))
        record = await self.in_thread(lambda: self._record(caller, question_id))
        view, iid = await self.in_thread(lambda: self._view(record))
        deadline = asyncio.get_running_loop().time() + timeout
        while view.status is QuestionStatus.WAITING:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                break
            fut = closings.watch(iid or question_id)
            try:
                view, iid = await self.in_thread(lambda: self._view(record))  # closed while we subscribed?
                if view.status is not QuestionStatus.WAITING:
                    break
                await asyncio.wait_for(asyncio.shield(fut), remaining)
            except TimeoutError:
                break
            finally:
                closings.forget(iid or question_id, fut)
            view, iid = await self.in_thread(lambda: self._view(record))
        return view

    async def in_thread(self, fn: Callable[[], T]) -> T:
        """Run a short store read on the service's own threads, never on the ones that ack Slack."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(16)
        return await anyio.to_thread.run_sync(fn, limiter=self._limiter)

    # ---- cancel and confirm ----------------------------------------------------
    def cancel(self, caller: Caller, question_id: str) -> QuestionView:
        """Close a waiting question as cancelled; its message is locked. 409 when it has closed already."""
        self._record(caller, question_id)
        try:
            admin.cancel(self.runtime, question_id, by=caller.name)
        except (AdminError, RunNotFound) as exc:
            view = self.get(caller, question_id)
            raise QuestionConflict(
                f"the question is {view.status.value}; only a waiting question can be cancelled"
            ) from exc
        return self.get(caller, question_id)

    def confirm(self, caller: Caller, question_id: str, context: dict[str, Any] | None) -> ConfirmResult:
        """Whether `context` is the facts the question was asked (and answered) on; 409 listing each change."""
        record = self._record(caller, question_id)
        try:
            now = canonical(context) if context is not None else ""
        except Exception as exc:  # ContextError: not JSON, or too long
            raise QuestionInvalid(str(exc), [_error(["context"], str(exc))]) from None
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


def _cursor(cursor: str | None) -> float | None:
    if cursor is None:
        return None
    try:
        return float(cursor)
    except ValueError:
        detail = "cursor must be a next_cursor from an earlier page"
        raise QuestionInvalid(detail, [_error(["cursor"], detail)]) from None


def _error(loc: list[str], msg: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": "value_error"}


def _visible(caller: Caller, record: ApiQuestionRecord) -> bool:
    """A token sees its own questions; an admin token all of them, or of its workspace when it has one."""
    if record.token == caller.name:
        return True
    return caller.admin and (not caller.team or record.team == caller.team)
