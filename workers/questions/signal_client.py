"""The process's one Temporal client, on an event loop of its own.

Both senders of a signal use it. The direct send runs as an outcome is announced
(`signal_direct`). The delivery job runs on a webhooks' thread (`signals.deliver`). The loop
runs on a daemon thread started at first use. The client connects at the first signal, and
again after a failure. A forked child makes its own, since threads do not survive a fork.

Every attempt at one outcome carries the same request id (`request_id`). Temporal keeps the
request ids a running workflow was signalled with, and records a repeat once. So an attempt
retried after Temporal took the first reaches the workflow once. That holds when the first
attempt's answer was lost, or its sender killed. `temporalio` is imported only here.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any, TypeVar

from workers.questions.config import TemporalConfig
from workers.questions.exceptions import QuestionError
from workers.store.records import TemporalTarget, WebhookState

SIGNAL = "parley_outcome"
"""The signal a waiting workflow is sent, with one argument: the outcome (`signals.outcome_payload`)."""
T = TypeVar("T")


class SignalRefused(QuestionError):
    """Temporal refused the signal for good.

    The workflow has ended, or the namespace is not there.
    """


class SignalTimedOut(QuestionError):
    """Temporal did not take the signal within the attempt's deadline."""


def request_id(state: WebhookState) -> str:
    """The id every attempt at signalling this outcome carries, so Temporal records it once."""
    return f"parley-{state.id}"


class SignalClient:
    """One Temporal client and the event loop it runs on, shared by every thread of the process."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._config: TemporalConfig | None = None
        self._connecting = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()

    def loop(self) -> asyncio.AbstractEventLoop:
        """The client's event loop, started on its own daemon thread the first time."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="temporal-signals", daemon=True).start()
                self._loop = loop
            return self._loop

    def start(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run `coro` on the loop without waiting for it (the caller bounds how many run)."""

        def spawn() -> None:
            task = asyncio.get_running_loop().create_task(coro)
            self._tasks.add(task)  # a task the loop alone refers to may be collected mid-flight
            task.add_done_callback(self._tasks.discard)

        self.loop().call_soon_threadsafe(spawn)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run `coro` on the loop and wait for its result, `timeout` seconds at most."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop())
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise SignalTimedOut(f"Temporal did not take the signal within {timeout:g} s") from None

    async def signal(self, cfg: TemporalConfig, target: TemporalTarget, payload: dict[str, Any], rid: str) -> None:
        """Signal `target`'s workflow with `payload`, under request id `rid`.

        The whole attempt has the deadline `cfg.attempt_timeout`.
        """
        try:
            await asyncio.wait_for(self._signal(cfg, target, payload, rid), cfg.attempt_timeout)
        except SignalRefused:
            raise
        except TimeoutError:
            self._client = None  # connect again next time
            raise SignalTimedOut(f"Temporal did not take the signal within {cfg.attempt_timeout:g} s") from None
        except BaseException:
            self._client = None
            raise

    async def _signal(self, cfg: TemporalConfig, target: TemporalTarget, payload: dict[str, Any], rid: str) -> None:
        from temporalio.api.common.v1 import WorkflowExecution
        from temporalio.api.workflowservice.v1 import SignalWorkflowExecutionRequest
        from temporalio.service import RPCError, RPCStatusCode

        client = await self._connected(cfg)
        request = SignalWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=target.workflow_id),
            signal_name=SIGNAL,
            identity=client.identity,
            request_id=rid,  # `WorkflowHandle.signal` draws a new one per call: Temporal could not tell a repeat
        )
        request.input.payloads.extend(await client.data_converter.encode([payload]))
        service = client.workflow_service
        try:
            await service.signal_workflow_execution(request, retry=True, timeout=timedelta(seconds=cfg.attempt_timeout))
        except RPCError as exc:
            if exc.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
                raise SignalRefused(f"Temporal refused the signal: {exc.message}") from None
            raise

    async def status(self, cfg: TemporalConfig, target: TemporalTarget, timeout: float) -> str:
        """The status of the latest run of `target`'s workflow, as Temporal names it ("RUNNING", "TERMINATED", …).

        "NOT_FOUND" when Temporal keeps no such workflow. Within `timeout` seconds, or it raises.
        """
        from temporalio.service import RPCError, RPCStatusCode

        try:
            client = await asyncio.wait_for(self._connected(cfg), timeout)
            handle = client.get_workflow_handle(target.workflow_id)
            described = await asyncio.wait_for(handle.describe(rpc_timeout=timedelta(seconds=timeout)), timeout)
        except RPCError as exc:
            if exc.status is RPCStatusCode.NOT_FOUND:
                return "NOT_FOUND"
            self._client = None
            raise
        except BaseException:
            self._client = None  # connect again next time
            raise
        return described.status.name if described.status is not None else "UNSPECIFIED"

    async def _connected(self, cfg: TemporalConfig) -> Any:
        from temporalio.client import Client, TLSConfig

        if not cfg.address:
            raise QuestionError("PARLEY_TEMPORAL_ADDRESS is not set in this process: it cannot signal the workflow")
        async with self._connecting:  # one connection for concurrent first signals
            if self._client is None or self._config != cfg:
                tls = TLSConfig(client_cert=cfg.tls_cert, client_private_key=cfg.tls_key) if cfg.tls_cert else False
                self._client = await Client.connect(cfg.address, namespace=cfg.namespace, tls=tls)
                self._config = cfg
            return self._client


_process: SignalClient | None = None
_process_lock = threading.Lock()


def current() -> SignalClient:
    """This process's client, made at first use (again in a forked child)."""
    global _process
    with _process_lock:
        if _process is None or _process.pid != os.getpid():
            _process = SignalClient()
        return _process


def prepare() -> None:
    """Import the Temporal client now, at start.

    The import takes about half a second, which the first signal would otherwise wait.
    """
    import temporalio.client  # noqa: F401
