"""How a call waits on its question: woken on close, with progress, bounded, left cleanly.

`QuestionService.wait` is the bare wait the API's long-poll uses. `ask` and `until` are an MCP
call's wait. `ask_human`, `get_answer` and `approve_tool_use` wait through them. So do the
gateway's approvals and elicitations. While a call waits, its client hears progress every
`PROGRESS_EVERY` seconds. A call waiting for a decision holds on until expiry plus `GRACE`
seconds. It then withdraws the question. A client that goes away mid-wait cancels the question,
or runs the caller's `when_gone`. This is shielded from the call's own cancellation. So nobody
answers what nobody waits for.

A worker thread creates and posts the question; a cancel cannot stop it. A call cancelled
meanwhile withdraws the question once the thread returns (`kept`). Redis failing while `ask`
waits is `WaitLost`, naming the question, which stays open. Its caller reads it later, never
asking twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import redis

from workers.exceptions import ConfigError, ParleyError
from workers.logs import Log
from workers.questions.exceptions import QuestionError
from workers.questions.models import QuestionCreate, QuestionStatus, QuestionView

if TYPE_CHECKING:
    from workers.questions.service import Caller, QuestionService

log = Log("parley.questions")
PROGRESS_EVERY = 15.0
"""Seconds between progress notifications while a call waits for people."""
GRACE = 60.0
"""Seconds past a question's expiry a call still waits for the expiry to be recorded."""
Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""Progress as MCP reports it: seconds waited, the total expected (or None), and a message."""
Gone = Callable[[str], Awaitable[None]]
"""What happens to question `id` when its client went away; shielded from the call's cancellation."""


class WaitLost(ParleyError):
    """Redis failed while a call waited on the question it asked.

    The question stays open, and people may still answer it. `error` is Redis's.
    """

    def __init__(self, question_id: str, error: redis.RedisError) -> None:
        self.question_id = question_id
        self.error = error
        super().__init__(f"question {question_id} was asked, but Redis failed while waiting on it: {error}")


@dataclass(frozen=True)
class Patience:
    """How long one call waits, what it reports meanwhile, and how it ends."""

    seconds: float
    progress: Progress | None = None
    saying: str | None = None  # the progress message
    total: float | None = None  # the progress total; None: unknown
    every: float = PROGRESS_EVERY
    withdraw: bool = False  # past `seconds` the question is cancelled, and read as it closed
    when_gone: Gone | None = None  # the client left: None keeps the question open

    @classmethod
    def within(cls, seconds: float) -> Patience:
        """Wait at most `seconds`.

        A question still waiting then stays open, to be waited on again.
        """
        return cls(seconds=seconds)

    @classmethod
    def decision(
        cls,
        expires_in: float,
        progress: Progress | None = None,
        saying: str | None = None,
        *,
        total: bool = False,
        grace: float = GRACE,
        every: float = PROGRESS_EVERY,
        when_gone: Gone | None = None,
    ) -> Patience:
        """Wait until people decide, at most until expiry plus `grace`.

        Past that, or when the client goes, the question is withdrawn. `total`: report the expiry as the
        progress total. `when_gone`: what runs instead of the withdrawal.
        """
        return cls(
            seconds=expires_in + grace,
            progress=progress,
            saying=saying,
            total=float(expires_in) if total else None,
            every=every,
            withdraw=True,
            when_gone=when_gone,
        )


class Waiting:
    """The MCP waits of one question service.

    Each is a series of its `wait`s, woken by its `Closings`.
    """

    def __init__(self, service: QuestionService) -> None:
        self.service = service

    async def ask(
        self, caller: Caller, body: QuestionCreate, patience: Patience, key: str | None = None
    ) -> tuple[QuestionView, bool]:
        """Ask `body` and wait on it as `patience` says.

        Returns the question as it ended, and whether it was created. `key` is an idempotency key. A
        second call with it joins the first call's question. Redis failing during the wait is
        `WaitLost`, naming the question.
        """
        service = self.service
        view, created = await service.in_thread(lambda: service.create(caller, body, key))
        asked = "question asked" if created else "question joined"
        log.info(asked, run_id=view.id, origin=caller.name, channel=view.channel or "", wait=patience.seconds)
        await self.kept(caller, view, patience)  # cancelled while it was created and posted: withdrawn
        if patience.seconds <= 0:
            return view, created
        try:
            return await self.until(caller, view.id, patience), created
        except redis.RedisError as exc:
            raise WaitLost(view.id, exc) from exc

    async def kept(self, caller: Caller, view: QuestionView, patience: Patience) -> None:
        """Raise the call's pending cancellation, ending its waiting question first.

        A cancel held off by a thread takes effect here. Call it before a result names the
        question. A cancelled call's client never sees that id.
        """
        try:
            await anyio.lowlevel.checkpoint_if_cancelled()
        except anyio.get_cancelled_exc_class():
            if view.status is QuestionStatus.WAITING:
                with anyio.CancelScope(shield=True):  # the client went away: nobody is to answer for it now
                    await self._gone(caller, view.id, patience)
            raise

    async def until(self, caller: Caller, question_id: str, patience: Patience) -> QuestionView:
        """Wait on the question as `patience` says.

        Returns it once closed, or as it stands at the bound.
        """
        try:
            view = await self._reporting(caller, question_id, patience)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # the client went away: nobody is to answer for it now
                await self._gone(caller, question_id, patience)
            raise
        if view.status is QuestionStatus.WAITING and patience.withdraw:
            log.info("question withdrawn: not closed in time", run_id=question_id, origin=caller.name)
            view = await self.withdraw(caller, question_id)
        return view

    async def withdraw(self, caller: Caller, question_id: str) -> QuestionView:
        """Cancel a waiting question and return it as it is now.

        One that closed meanwhile stays as it closed.
        """
        service = self.service
        try:
            return await service.in_thread(lambda: service.cancel(caller, question_id))
        except QuestionError:
            return await service.in_thread(lambda: service.get(caller, question_id))

    async def _reporting(self, caller: Caller, question_id: str, patience: Patience) -> QuestionView:
        """`_bounded`, reporting progress meanwhile.

        Its errors are raised as they are, never grouped.
        """
        if patience.progress is None:
            return await self._bounded(caller, question_id, patience.seconds)
        failed: Exception | None = None
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._report, patience)
            try:
                view = await self._bounded(caller, question_id, patience.seconds)
            except Exception as exc:  # a task group would wrap it in an ExceptionGroup
                failed = exc
            tasks.cancel_scope.cancel()
        if failed is not None:
            raise failed
        return view

    async def _bounded(self, caller: Caller, question_id: str, seconds: float) -> QuestionView:
        deadline = anyio.current_time() + seconds
        view = await self.service.wait(caller, question_id, seconds)
        while view.status is QuestionStatus.WAITING and (left := deadline - anyio.current_time()) > 0:
            view = await self.service.wait(caller, question_id, left)  # each wait is bounded by `max_wait`
        return view

    async def _gone(self, caller: Caller, question_id: str, patience: Patience) -> None:
        log.info("client went away while waiting", run_id=question_id, origin=caller.name)
        try:
            if patience.when_gone is not None:
                await patience.when_gone(question_id)
            elif patience.withdraw:
                await self.withdraw(caller, question_id)
        except Exception as exc:  # the call is cancelled already: its leaving must not fail louder
            log.warning("could not close the question of a client gone", run_id=question_id, error=repr(exc))

    @staticmethod
    async def _report(patience: Patience) -> None:
        """Report the seconds waited every `patience.every` seconds, until cancelled."""
        assert patience.progress is not None
        waited = 0.0
        while True:
            await anyio.sleep(patience.every)
            waited += patience.every
            with contextlib.suppress(Exception):  # the client went away: the wait itself is cancelled
                await patience.progress(waited, patience.total, patience.saying)


@contextlib.asynccontextmanager
async def listening(service: QuestionService) -> AsyncIterator[None]:
    """Within this block, the service's close notifications wake its waits."""
    if service.closings is None:
        raise ConfigError("this question service was built without close notifications (`closings`)")
    await service.closings.start()
    try:
        yield
    finally:
        await service.closings.stop()
