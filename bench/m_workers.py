"""7. Worker classes: RQ's forking `Worker`, `SimpleWorker`, `SpawnWorker` and `WorkerPool`, on two job mixes.

- Parley's mix: a paused `bench-cycle` run's answer is accepted (the store's atomic
  close, as the bot does), its resume enqueued; the job replays the agent, which
  says one progress line and posts its final answer (two Web API calls).
  Enqueue-to-start runs from the enqueue to the agent's code running again after
  `run.ask`; jobs/s drains a batch of accepted answers.
- Trivial jobs: raw RQ, enqueue to the job function's first line, and jobs/s of
  a batch of `bench.jobs.noop`.
simple/fork/spawn run one `parley worker --worker-class X` process (and one raw
worker of that class); the pools are RQ `WorkerPool`s of two workers of the inner
class, Parley's wired as `parley worker` wires its runtime.
"""

from __future__ import annotations

import time

from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from bench.agents import AGENT, three_item_request
from bench.jobs import DONE_KEY
from bench.measurement import Config, Result, Row
from bench.redis_db import flush
from bench.seed import Seeded, seed_paused
from bench.stack import Stack
from bench.stats import Dist, ratio
from workers.interaction import Answer
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import keys
from workers.store.job_ids import resume as resume_job_id
from workers.store.question_closes import Closed
from workers.store.records import CloseMode, RunStatus

RAW_QUEUE = "bench-raw"
CLASSES = ("simple", "fork", "spawn", "pool-simple", "pool-fork")
ANSWERS = [Answer(id="env", choice="production"), Answer(id="regions", choices=["eu-west-1"])]


def _close(rt: Runtime, run: Seeded) -> None:
    interrupt = rt.store.interrupt(run.iid)
    assert interrupt is not None
    closed = rt.store.close(interrupt, CloseMode.ANSWER, run.user, interrupt.request.validate_answers(ANSWERS), "bench")
    if not isinstance(closed, Closed) or closed.again:
        raise RuntimeError(f"bench answer not accepted anew: {closed}")


def _parley_start(rt: Runtime, run: Seeded) -> float | str:
    """Enqueue → agent resumed (ms), or the error that failed the job."""
    _close(rt, run)
    job_id = resume_job_id(run.run_id, run.iid)
    t0 = time.time()
    enqueue_run(rt.queue, run.run_id, job_id)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        got = rt.redis.blpop([f"bench:resumed:{run.run_id}"], timeout=0.05)
        if got is not None:
            while rt.redis.hget(keys.run(run.run_id), "status") != b"succeeded" and time.monotonic() < deadline:
                time.sleep(0.001)
            return (float(got[1]) - t0) * 1000
        job = Job.fetch(job_id, connection=rt.redis, serializer=JSONSerializer)
        if job.get_status() == "failed":
            return (job.latest_result().exc_string or "failed").strip().splitlines()[-1]
    raise TimeoutError(f"run {run.run_id} did not resume")


def _raw_start(raw: Queue, i: int) -> float:
    key = f"bench:start:{i}:{time.time_ns()}"
    t0 = time.time()
    raw.enqueue("bench.jobs.mark", key)
    got = raw.connection.blpop([key], timeout=15)
    if got is None:
        raise TimeoutError("raw job did not start")
    return (float(got[1]) - t0) * 1000


def _parley_rate(rt: Runtime, runs: list[Seeded]) -> float:
    done = rt.store.count(RunStatus.SUCCEEDED)
    t0 = time.perf_counter()
    for run in runs:
        _close(rt, run)
        enqueue_run(rt.queue, run.run_id, resume_job_id(run.run_id, run.iid))
    deadline = time.monotonic() + 120
    while rt.store.count(RunStatus.SUCCEEDED) < done + len(runs):
        if time.monotonic() > deadline:
            raise TimeoutError(f"Parley jobs stalled: {rt.store.counts()}")
        time.sleep(0.002)
    return len(runs) / (time.perf_counter() - t0)


def _raw_rate(raw: Queue, n: int) -> float:
    raw.connection.set(DONE_KEY, 0)
    t0 = time.perf_counter()
    raw.enqueue_many([Queue.prepare_data("bench.jobs.noop", result_ttl=600) for _ in range(n)])
    deadline = time.monotonic() + 120
    while int(raw.connection.get(DONE_KEY) or 0) < n:
        if time.monotonic() > deadline:
            raise TimeoutError("raw jobs stalled")
        time.sleep(0.002)
    return n / (time.perf_counter() - t0)


def _one_class(stack: Stack, cfg: Config, cls: str) -> dict[str, object]:
    spawn = cls == "spawn"
    samples = cfg.pick(3, 12) if spawn else cfg.pick(6, 30)
    batch = cfg.pick(30, 200)
    raw_batch = cfg.pick(12, 40) if spawn else cfg.pick(100, 600)
    procs_n = 2 if cls.startswith("pool") else 1
    flush(stack.client)
    rt = Runtime.build(stack.client)
    raw = Queue(RAW_QUEUE, connection=stack.client, serializer=JSONSerializer)
    n = cfg.rounds * samples + batch + 2
    runs = iter(
        seed_paused(
            rt.store,
            n,
            three_item_request(),
            agent=AGENT,
            text="say",
            user_for=lambda i: f"U0B{i % 100:03d}",
            messages=stack.seed_messages(n),
        )
    )
    # `parley worker` does not offer spawn: each job would start a fresh interpreter without
    # the worker's wiring (see parley/worker.py); only RQ's own figure is measured for it.
    procs = ([] if spawn else stack.parley_workers(procs_n, cls)) + stack.raw_workers(RAW_QUEUE, procs_n, cls)
    parley, bare = Dist(), Dist()
    out: dict[str, object] = {"processes": procs_n}
    try:
        first = "not offered by parley worker" if spawn else _parley_start(rt, next(runs))  # warm up
        _raw_start(raw, -1)
        if isinstance(first, str):
            out["parley_error"] = first
        for rnd in range(cfg.rounds):
            sides = ["raw", "parley"] if rnd % 2 else ["parley", "raw"]
            for side in sides:
                if side == "parley" and "parley_error" not in out:
                    parley.add_round(float(_parley_start(rt, next(runs))) for _ in range(samples))
                elif side == "raw":
                    bare.add_round(_raw_start(raw, i) for i in range(samples))
        if "parley_error" not in out:
            out["parley_rate"] = _parley_rate(rt, [next(runs) for _ in range(batch)])
        out["raw_rate"] = _raw_rate(raw, raw_batch)
    finally:
        stack.stop(procs)
    out["parley"], out["raw"] = (parley.summary() if parley.samples else None), bare.summary()
    out["parley_p50"] = parley.p50 if parley.samples else None
    out["raw_p50"] = bare.p50
    out["spread"] = f"{parley.spread() or '-'} | {bare.spread()}"
    return out


def measure(stack: Stack, cfg: Config) -> Result:
    result = Result()
    for cls in CLASSES:
        fig = _one_class(stack, cfg, cls)
        result.detail[cls] = fig
        label = f"{cls} x{fig['processes']}" if cls.startswith("pool") else cls
        err = fig.get("parley_error")
        pp, rp = fig["parley_p50"], fig["raw_p50"]
        pr, rr = fig.get("parley_rate"), fig["raw_rate"]
        result.rows += [
            Row(
                "7 worker class",
                label,
                "enqueue->start p50 ms",
                pp if pp is not None else float("nan"),
                rp,
                ratio(pp, rp) if pp is not None else None,
                spread=str(fig["spread"]),
                note=f"Parley's jobs fail: {err}" if err else "",
            ),
            Row(
                "7 worker class",
                label,
                "jobs/s",
                pr if pr is not None else float("nan"),
                rr,
                ratio(pr, rr) if pr is not None else None,
            ),
        ]
    return result
