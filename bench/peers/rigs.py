"""One waiting system each, ready to take answers: Parley's paused runs, a paused Prefect flow, a served one.

Every rig answers one run at a time (`sample`, in ms from the answer to the first line
after the wait) or several at once (`burst`, in ms from the answers to the last of them
running again). Prefect's rigs wait a random part of the poll interval after the run is
paused before answering, so an answer lands at a random point of the peer's poll cycle.
Parley's rig is `bench.m_resume`'s: a signed Submit to `parley serve`, answered by one
real `parley worker` (SimpleWorker, the default), timed to the line after `run.ask`.
"""

from __future__ import annotations

import random
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.agents import AGENT, three_item_request
from bench.m_resume import _sample_parley
from bench.peers.prefect_server import (
    DEPLOYMENT,
    SUSPEND_FLOW,
    PrefectServer,
    parse_resumed,
    pause_argv,
    ready_key,
    resumed_key,
    serve_argv,
)
from bench.processes import Proc
from bench.seed import Seeded, SubmitClicks, seed_paused
from bench.stack import Poster, Stack
from workers.store import keys
from workers.store.runs import RunStore


def together(calls: list[Callable[[], Any]]) -> float:
    """Start every call at once (one thread each, behind a barrier); the wall-clock time they were released."""
    barrier = threading.Barrier(len(calls) + 1)
    errors: list[BaseException] = []

    def go(call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            call()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(c,), daemon=True) for c in calls]
    for t in threads:
        t.start()
    t0 = time.time()
    barrier.wait()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    return t0


class ParleyRig:
    """`n` seeded paused runs of the bench agent and one `parley worker`; each answer uses a fresh run."""

    def __init__(self, stack: Stack, n: int) -> None:
        self.stack = stack
        request = three_item_request()
        self.runs = iter(
            seed_paused(
                RunStore(stack.client),
                n,
                request,
                agent=AGENT,
                user_for=lambda i: f"U0B{i % 100:03d}",
                messages=stack.seed_messages(n),
            )
        )
        self.clicks = SubmitClicks(request)
        self.procs = stack.parley_workers(1, "simple")
        self.poster = Poster(stack.serve_port)

    def sample(self) -> float:
        return _sample_parley(self.stack, self.poster, self.clicks, next(self.runs))

    def burst(self, k: int) -> float:
        runs: list[Seeded] = [next(self.runs) for _ in range(k)]
        posters = [Poster(self.stack.serve_port) for _ in runs]

        def click(poster: Poster, run: Seeded) -> Callable[[], None]:
            return lambda: None if poster.post(self.clicks.body(run)) == 200 else _refused()

        t0 = together([click(p, r) for p, r in zip(posters, runs, strict=True)])
        last = 0.0
        for run in runs:
            got = self.stack.client.blpop([f"bench:resumed:{run.run_id}"], timeout=30)
            if got is None:
                raise TimeoutError(f"run {run.run_id} did not resume within 30 s")
            last = max(last, float(got[1]))
        deadline = time.monotonic() + 30
        for run in runs:
            while self.stack.client.hget(keys.run(run.run_id), "status") != b"succeeded":
                if time.monotonic() > deadline:
                    raise TimeoutError(f"run {run.run_id} did not finish")
                time.sleep(0.005)
        for p in posters:
            p.close()
        return (last - t0) * 1000

    def close(self) -> None:
        self.poster.close()
        self.stack.stop(self.procs)


def _refused() -> None:
    raise RuntimeError("parley serve refused a Submit click")


class PauseRig:
    """One process running one Prefect flow run that pauses `count` times, polling every `poll` s."""

    def __init__(self, server: PrefectServer, poll: float, count: int) -> None:
        self.server = server
        self.poll = poll
        self.tag = secrets.token_hex(6)
        self.proc: Proc = server.start_flow(f"prefect-pause-{self.tag}", pause_argv(self.tag, poll, count))

    def paused(self, timeout: float = 180, confirm: bool = True) -> str:
        """The flow run id, once the flow is paused again.

        `confirm=False` trusts the flow's own signal (pushed just before `pause_flow_run`)
        instead of asking the server: with 100 flows polling it, a SQLite server can stop
        answering, and the memory figure must not hang on it.
        """
        from bench.peers import prefect_api

        got = self.server.stack.client.blpop([ready_key(self.tag)], timeout=timeout)
        if got is None:
            raise TimeoutError(f"the paused flow did not start within {timeout:g} s:\n{self.proc.tail()}")
        run_id = got[1].decode()
        if confirm:
            prefect_api.wait_paused(run_id, 60)
        return run_id

    def resumed(self, timeout: float) -> float:
        got = self.server.stack.client.blpop([resumed_key(self.tag)], timeout=timeout)
        if got is None:
            raise TimeoutError(f"the paused flow did not resume within {timeout:.0f} s:\n{self.proc.tail()}")
        return parse_resumed(got[1])

    def sample(self) -> float:
        from bench.peers import prefect_api

        run_id = self.paused()
        time.sleep(random.uniform(0, self.poll))
        t0 = time.time()
        prefect_api.resume(run_id)
        return (self.resumed(self.poll + 60) - t0) * 1000


def answer_paused(rigs: list[PauseRig], run_ids: list[str]) -> float:
    """Answer every rig's paused flow at once: ms until the last one runs again."""
    from bench.peers import prefect_api

    time.sleep(random.uniform(0, rigs[0].poll))
    t0 = together([lambda i=i: prefect_api.resume(i) for i in run_ids])
    return (max(r.resumed(rigs[0].poll + 120) for r in rigs) - t0) * 1000


class SuspendRig:
    """`suspend_flow.serve()` with the runner polling every `poll` s; each sample is a new flow run."""

    def __init__(self, server: PrefectServer, poll: int) -> None:
        from bench.peers import prefect_api

        self.server = server
        self.poll = poll
        self.proc: Proc = server.start_flow(f"prefect-serve-poll{poll}", serve_argv(), runner_poll=poll)
        self.deployment = prefect_api.deployment_id(f"{SUSPEND_FLOW}/{DEPLOYMENT}", 180)

    def suspended(self, k: int) -> list[tuple[Any, str]]:
        """`k` new runs of the deployment, once every one has suspended: (flow run id, tag) each."""
        from bench.peers import prefect_api

        runs = []
        for _ in range(k):
            tag = secrets.token_hex(6)
            runs.append((prefect_api.create_run(self.deployment, {"tag": tag}), tag))
        for run_id, _ in runs:
            try:
                prefect_api.wait_paused(run_id, self.poll + 300)
            except TimeoutError as exc:
                states = prefect_api.flow_run_states([r for r, _ in runs])
                raise TimeoutError(f"{exc}; states {states}:\n{self.proc.tail()}") from None
        return runs

    def answer(self, runs: list[tuple[Any, str]]) -> float:
        """Answer these suspended runs at once: ms until the last one runs again."""
        from bench.peers import prefect_api

        time.sleep(random.uniform(0, self.poll))
        t0 = together([lambda i=run_id: prefect_api.resume(i) for run_id, _ in runs])
        last = 0.0
        for _, tag in runs:
            got = self.server.stack.client.blpop([resumed_key(tag)], timeout=self.poll + 300)
            if got is None:
                raise TimeoutError(f"a suspended run did not run again:\n{self.proc.tail()}")
            last = max(last, parse_resumed(got[1]))
        return (last - t0) * 1000

    def sample(self) -> float:
        return self.answer(self.suspended(1))
