"""`parley run`'s inline execution on the test Redis: retried in this process, and its exit status.

The command executes a run in its own process rather than handing it to a worker; these
tests drive that loop (`execute_inline`, `conclude`) with a probe agent and a terminal host
whose prompter is never asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from rq.job import Job
from rq.registry import ScheduledJobRegistry
from terminal_support import ScriptedPrompter

from bot.terminal import TerminalHost
from parley.terminal import conclude, execute_inline
from workers.exceptions import AgentError
from workers.registry import AgentFn, AgentRegistry, AgentSpec
from workers.runs import RunService
from workers.runtime.host import InteractorRouter
from workers.runtime.wiring import Runtime, RuntimeSettings
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration


def inline_runtime(r: redis.Redis, tmp_path: Path, agent: AgentFn) -> tuple[Runtime, TerminalHost]:
    registry = AgentRegistry()
    registry.add(AgentSpec(name="probe", description="", fn=agent))
    host = TerminalHost(ScriptedPrompter({}))
    # A retry delay, so the retry job is scheduled rather than queued: a worker of another test
    # sharing this Redis must not take it before this process withdraws it.
    settings = RuntimeSettings(retry_delays=(0.5,), data_dir=tmp_path)
    return Runtime.build(r, hosts=InteractorRouter({"terminal": host}), settings=settings, registry=registry), host


def test_a_retryable_failure_is_retried_inline(r: redis.Redis, tmp_path: Path) -> None:
    calls: list[str] = []

    def flaky(run: object, text: str) -> str:
        calls.append(text)
        if len(calls) == 1:
            raise ConnectionError("tracker unreachable")
        return f"done: {text}"

    runtime, host = inline_runtime(r, tmp_path, flaky)
    run_id = runtime.store.create("probe", "x", "tester", {"host": "terminal"}).id
    final = execute_inline(RunService(runtime), host, run_id)
    assert (final.status, final.result, final.failures) == (RunStatus.SUCCEEDED, "done: x", 1)
    assert calls == ["x", "x"]
    assert not Job.exists(f"retry-{run_id}-1", connection=r)  # no worker races this process for the retry
    assert f"retry-{run_id}-1" not in ScheduledJobRegistry(queue=runtime.queue).get_job_ids()
    assert conclude(host, final) == 0


def test_a_failed_run_ends_the_command_with_status_1(r: redis.Redis, tmp_path: Path) -> None:
    def refuses(run: object, text: str) -> str:
        raise AgentError("nothing to do")

    runtime, host = inline_runtime(r, tmp_path, refuses)
    run_id = runtime.store.create("probe", "x", "tester", {"host": "terminal"}).id
    final = execute_inline(RunService(runtime), host, run_id)
    assert (final.status, final.error) == (RunStatus.FAILED, "nothing to do")
    assert run_id in host.reported  # the host printed the failure as it happened
    assert conclude(host, final) == 1
