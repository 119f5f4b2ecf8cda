"""`QuestionService`: create, read, list, wait on, cancel and confirm questions in-process.

The HTTP API is a thin layer over this. An MCP server, or any caller in a Parley process, uses
it directly. It brings a `Caller` of its own. Every call but `wait` is synchronous and short.
`wait` is a coroutine that holds no thread while it waits.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from workers.exceptions import AdminError, ConfigError, RunNotFound, SecretUnreadable
from workers.interaction.context import canonical, changes, digest
from workers.logs import Log
from workers.questions.channels import NO_SUCH_CHANNEL, ChannelNames, where_to_post
from workers.questions.config import QuestionConfig
from workers.questions.exceptions import (
    QuestionConflict,
    QuestionForbidden,
    QuestionGone,
    QuestionInvalid,
    QuestionNotFound,
    QuestionNotPosted,
    QuestionRateLimited,
    SecretsUnavailable,
    TooManyOpenQuestions,
)
from workers.questions.models import (
    DECLINABLE,
    ELICITATION,
    ConfirmResult,
    QuestionCreate,
    QuestionPage,
    QuestionStatus,
    QuestionView,
    TokenScope,
)
from workers.questions.tokens import temporal_granted
from workers.questions.views import build_view, unreadable_view
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
    LOCAL_OWNER,
    TOKEN_OWNER,
    ApiQuestionRecord,
    ApiTokenRecord,
    GroupState,
    InterruptRecord,
    TemporalTarget,
)
from workers.store.runs import new_id

AGENT = "question"
HOST = "api"
T = TypeVar("T")
QUORUM_FIRST_READ, QUORUM_LAST_READ = 0.02, 1.0
"""Seconds between reads of a quorum's run once its group has ended: doubling, capped."""
log = Log("parley.questions")


@dataclass(frozen=True)
class Caller:
    """Who asks: its questions' owner, the origin name shown, and its rights.

    `Caller(name)` alone is a local MCP server's origin (`parley mcp`), owned by `mcp:<name>`. A
    token's caller is `Caller.of(token)`. It is owned by the token itself, never by its name.
    """

    name: str
    scopes: frozenset[str] = field(default_factory=lambda: frozenset({TokenScope.ASK.value}))
    team: str = ""  # the token's workspace: its questions are asked there, and an admin sees only those
    owner: str = ""  # "": `mcp:<name>`
    since: float = 0.0  # when the owner came to be: questions asked under its name before owners existed, from then
    rate_limit: int | None = None  # a token's own rate limit (None: the API's); a local origin has none
    open_questions: int | None = None  # a token's own cap on open questions (None: the API's)
    via: str = "api"  # how it asks: "api" (HTTP API) or "mcp"; Slack shows it above the question
    temporal: tuple[str, ...] = ()  # the workflow-id globs it may signal (a token's `--temporal`); none by default

    def __post_init__(self) -> None:
        if not self.owner:
            object.__setattr__(self, "owner", f"{LOCAL_OWNER}{self.name}")

    @property
    def admin(self) -> bool:
        return TokenScope.ADMIN.value in self.scopes

    @property
    def is_token(self) -> bool:
        return self.owner.startswith(TOKEN_OWNER)

    @classmethod
    def of(cls, token: ApiTokenRecord) -> Caller:
        return cls(
            name=token.name,
            scopes=frozenset(token.scopes),
            team=token.team,
            owner=token.owner,
            since=token.created_at,
            rate_limit=token.rate_limit,
            open_questions=token.open_questions,
            temporal=tuple(token.temporal),
        )


class QuestionService:
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
                raise QuestionInvalid(str(exc), [_error(["callback_url"], str(exc))]) from None
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
                _body_digest(body),
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
            raise QuestionInvalid(detail, [_error([], view.error or "")])
        return view, True

    def _check_temporal(self, caller: Caller, body: QuestionCreate) -> None:
        """Refuse a Temporal target this Parley cannot signal, or one not granted.

        Parley cannot signal without a configured Temporal, or in another namespace. It signals with its
        own credentials. So a caller may name only a granted id.
        """
        cfg = self.config.temporal
        assert body.temporal is not None
        if not cfg.address:
            detail = "this Parley signals no Temporal workflow: PARLEY_TEMPORAL_ADDRESS is not set"
            raise QuestionInvalid(detail, [_error(["temporal"], detail)])
        if body.temporal.namespace != cfg.namespace:
            given = body.temporal.namespace
            detail = f"this Parley signals workflows of namespace {cfg.namespace!r} only, not {given!r}"
            raise QuestionInvalid(detail, [_error(["temporal", "namespace"], detail)])
        workflow_id = body.temporal.workflow_id
        if not temporal_granted(caller.temporal, workflow_id):
            granted = ", ".join(repr(g) for g in caller.temporal) or "none"
            log.warning("temporal target refused: not granted", origin=caller.name, workflow_id=workflow_id[:200])
            detail = (
                f"this token may not signal Temporal workflow {workflow_id[:200]!r} (granted: {granted}); "
                "an operator grants ids with `parley tokens create NAME --temporal 'GLOB'`"
            )
            raise QuestionForbidden(detail, errors=[_error(["temporal", "workflow_id"], detail)])

    def _channel_by_id(self, caller: Caller, body: QuestionCreate) -> QuestionCreate:
        """`body` with a `#name` channel replaced by its id.

        If no channel has that name, 422 lists the channels.
        """
        if not body.channel or not body.channel.startswith("#"):
            return body
        team = caller.team or self.team
        found = self.channels.find(body.channel[1:], team) if self.channels is not None else None
        if found is None:
            detail = f"Parley sees no channel {body.channel}; {where_to_post(self.channels, team)}"
            raise QuestionInvalid(detail, [_error(["channel"], detail)], title=f"No channel {body.channel}")
        return body.model_copy(update={"channel": found})

    def _not_posted(self, record: ApiQuestionRecord, binding: Binding | None, exc: Exception) -> None:
        """Handle a create whose execution failed.

        A question not asked yet is withdrawn. The caller's error then stands, and no worker posts it
        later. Otherwise this raises `QuestionNotPosted` (503), naming it.
        """
        try:
            withdrawn = self.store.withdraw(record, binding)
        except Exception as failed:  # Redis still down: the question stays, bound to its key
            log.warning("could not withdraw the question", run_id=record.id, error=repr(failed))
            withdrawn = False
        if withdrawn:
            log.warning("question withdrawn: it failed before it was asked", run_id=record.id, error=repr(exc))
            return
        log.warning("question created but not posted yet", run_id=record.id, origin=record.token, error=repr(exc))
        raise QuestionNotPosted(record.id, binding is not None) from exc

    def _check_open(self, caller: Caller, binding: Binding | None) -> None:
        """Refuse a question past the caller's cap on open ones (`TooManyOpenQuestions`, 429).

        A retry whose Idempotency-Key made its question already passes, to be given that question.
        """
        cap = caller.open_questions or self.config.open_questions
        count = self.store.open.full(caller.owner, cap)
        if count and not (binding is not None and self.store.bound(binding) is not None):
            log.warning("question refused: too many open", origin=caller.name, open=count, cap=cap)
            detail = (
                f"{caller.name} has {count} question{'s' if count != 1 else ''} open and may have {cap} at once; "
                "more may be asked as these are answered, cancelled or expire"
            )
            raise TooManyOpenQuestions(detail, open_questions=count, limit=cap)

    def _charge_notices(self, caller: Caller, body: QuestionCreate) -> None:
        """Charge the question's DMs against the token's rate limit, one request each.

        There is one DM per person asked or escalated to. So asking 50 people costs what 50 requests
        cost. Over the limit, the answer is 429.
        """
        notices = len(body.request.assignees or ([body.user] if body.user else [])) + len(body.request.escalate_to)
        if not caller.is_token or not notices:
            return
        limit = caller.rate_limit or self.config.rate_limit
        wait = self.store.hit(caller.owner, limit, self.config.rate_window, cost=notices)
        if wait:
            detail = f"over {limit} requests in {self.config.rate_window} s (each person a question DMs counts as one)"
            raise QuestionRateLimited(detail, wait)

    # ---- read ------------------------------------------------------------------
    def _record(self, caller: Caller, question_id: str) -> ApiQuestionRecord | UnreadableQuestion:
        record = self.store.read(question_id) if question_id.isascii() and len(question_id) < 100 else None
        if record is None or not _visible(caller, record):
            raise QuestionNotFound(f"no question {question_id!r}")
        return record

    def _readable(self, caller: Caller, question_id: str) -> ApiQuestionRecord:
        record = self._record(caller, question_id)
        if isinstance(record, UnreadableQuestion):
            raise QuestionConflict(f"question {question_id} cannot be read: {record.error}")
        return record

    def _view(self, record: ApiQuestionRecord | UnreadableQuestion) -> tuple[QuestionView, str]:
        """The question as the API shows it, and the interrupt it waits on.

        An unreadable question says so.
        """
        view, interrupt_id, _ = self._view_and_question(record)
        return view, interrupt_id

    def _view_and_question(
        self, record: ApiQuestionRecord | UnreadableQuestion
    ) -> tuple[QuestionView, str, InterruptRecord | None]:
        """As `_view`, with the run's own question as read.

        It is None for a quorum's question, or before there is one.
        """
        if isinstance(record, UnreadableQuestion):
            return unreadable_view(record), "", None
        try:
            run = self.runtime.store.find(record.id)
            interrupt = self.runtime.store.interrupt(run.interrupt) if run is not None and run.interrupt else None
            shared = None
            if record.quorum is not None and interrupt is None and run is not None and run.interrupt:
                group = self.runtime.store.groups.group(run.interrupt)  # each person's question, one message
                shared = group.message if group is not None else None
            view = build_view(record, run, interrupt, shared)
            return view, (run.interrupt if run is not None else ""), interrupt
        except (ValueError, KeyError, TypeError) as exc:  # its run or question: written by another version
            log.error("a question's run cannot be read", run_id=record.id, error=repr(exc))
            error = str(exc).splitlines()[0]
            unreadable = UnreadableQuestion(record.id, record.token, record.team, record.created_at, error)
            return unreadable_view(unreadable), "", None

    def _refer(self, record: ApiQuestionRecord, question: InterruptRecord | None) -> None:
        """Once the run's question holds the request and context, keep them there alone (`QuestionStore.refer`).

        Only a single question asked as given qualifies; a failure here costs bytes, never the question."""
        if question is None or question.run_id != record.id or question.group or record.quorum is not None:
            return
        if question.request != record.request or question.context != record.context:
            return
        try:
            self.store.refer(record, question.id)
        except Exception as exc:  # Redis went away after posting: the record keeps its own copy
            log.warning("could not leave the request to the question", run_id=record.id, error=repr(exc))

    def get(self, caller: Caller, question_id: str) -> QuestionView:
        view = self._view(self._record(caller, question_id))[0]
        self._receipts_first(view)
        return view

    def _receipts_first(self, view: QuestionView) -> None:
        """Write a closed question's due receipts before the API reports its close.

        With the key here, no answer of the API shows a close without its receipt.
        Without it, a worker writes them, and the receipt route says so meanwhile.
        """
        if view.status is not QuestionStatus.WAITING and self.runtime.receipts.signer is not None:
            self.runtime.receipts.write_for_run(view.id)

    def asked_by(self, caller: Caller, question_id: str) -> ApiQuestionRecord:
        """The question if `caller` asked it.

        Any other caller, an admin too, is told there is no such question.
        """
        record = self._record(caller, question_id)
        if not _owns(caller, record):
            raise QuestionNotFound(f"no question {question_id!r}")
        if isinstance(record, UnreadableQuestion):
            raise QuestionGone(f"question {question_id!r} cannot be read, so neither can its secret answers")
        return record

    def reveal(self, caller: Caller, question_id: str) -> QuestionView:
        """The question with its secret answers in the clear, once, for its asker.

        Before the answer, or without a secret, this is the plain view and uses nothing up. The first
        read of an answered question's secrets deletes their sealed copy. Every later read is
        `QuestionGone` (410). So is a read after retention deleted them.
        """
        record = self.asked_by(caller, question_id)
        view, iid = self._view(record)
        given = [i.id for i in record.request.items if i.is_secret and view.answers and view.answers.get(i.id)]
        if view.status is not QuestionStatus.ANSWERED or not given or view.answers is None:
            return view  # nothing secret was given (yet): nothing to read, nothing used up
        box = self.runtime.store.box
        if box is None:
            raise SecretsUnavailable("PARLEY_SECRET_KEY is not set here, so secret answers cannot be opened")
        for _ in range(3):  # a copy kept by the run between our read and our claim: read it again
            found = self.store.sealed_secrets(record.id, iid)
            if found is None:
                break
            sealed, kept = found
            try:
                values = box.open(sealed)
            except SecretUnreadable as exc:
                raise SecretsUnavailable(str(exc)) from None
            if self.store.claim_secrets(record.id, sealed if kept else None, self.runtime.settings.retention):
                log.info("secret answers revealed", run_id=record.id, interrupt_id=iid, origin=caller.name)
                shown = {k: values.get(k, v) for k, v in view.answers.items()}
                return view.model_copy(update={"answers": shown})
        raise QuestionGone(
            f"the secret answers of question {question_id!r} were read once already, or are no longer kept"
        )

    def list(
        self, caller: Caller, status: QuestionStatus | None = None, limit: int = 20, cursor: str | None = None
    ) -> QuestionPage:
        """The caller's questions, newest first (an admin's: all).

        `cursor` comes from the page before.
        """
        limit = max(1, min(limit, 100))
        before = _cursor(cursor)
        found: list[QuestionView] = []
        next_cursor: str | None = None
        owner = None if caller.admin else caller.owner
        while len(found) < limit:
            rows = self.store.page(owner, before, 100, legacy=caller.name, since=caller.since)
            if not rows:
                break
            scores = dict(rows)  # the index's times: the cursor goes on past a record that cannot be read
            for record in self.store.many(scores):
                before = scores[record.id]
                if not _visible(caller, record):
                    continue
                view = self._view(record)[0]
                if status is None or view.status is status:
                    found.append(view)
                if len(found) == limit:
                    next_cursor = repr(before)
                    break
            else:
                before = rows[-1][1]  # past this chunk, records gone meanwhile included
            if len(rows) < 100:
                break
        return QuestionPage(questions=found, next_cursor=next_cursor)

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
        before = float(cursor)
    except ValueError:
        before = math.nan
    if not math.isfinite(before):  # "nan" and "inf" read as floats, and Redis refuses them as a score
        detail = "cursor must be a next_cursor from an earlier page"
        raise QuestionInvalid(detail, [_error(["cursor"], detail)])
    return before


def _body_digest(body: QuestionCreate) -> str:
    """The sha256 of the body's JSON with sorted keys.

    Equal bodies give one digest, whatever their order.
    """
    text = json.dumps(body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _error(loc: list[str], msg: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": "value_error"}


def _owns(caller: Caller, record: ApiQuestionRecord | UnreadableQuestion) -> bool:
    """Whether `caller` asked the question.

    A question from before owners existed belongs to its name's owner. That owner must have existed
    when it was asked. So a token created later under a revoked token's name never owns it.
    """
    if record.owner:
        return record.owner == caller.owner
    return record.token == caller.name and record.created_at >= caller.since


def _visible(caller: Caller, record: ApiQuestionRecord | UnreadableQuestion) -> bool:
    """What a token sees: its own questions, or an admin's all.

    An admin token with a workspace sees only that workspace's questions.
    """
    if _owns(caller, record):
        return True
    return caller.admin and (not caller.team or record.team == caller.team)
