"""4. Full-cycle throughput: runs/s for start → ask → answer → final, against raw RQ trivial jobs/s.

Parley: M `bench-cycle` runs are created and enqueued at once with no thread yet, so
the worker posts the thread root (`/parley` posts it from `parley serve`; see
`bench.cycles`) and all four Web API calls are the worker's; real `parley worker`
processes run them until they park on their question; answerer threads click
Submit on each question through `parley serve` as soon as it appears; the workers
resume the runs, which post their final answer. Timed from the first create to
the last run succeeding. Baseline: the same number of raw RQ workers (same class,
same Redis) drain a batch of trivial jobs enqueued at once.

Two targets, each a row per number of workers: runs/s at least a quarter of raw jobs/s
(it was a third before the service round, which set a quarter for one worker and two), and
the CPU a run costs `parley worker` and `parley serve` together at most 10 ms, read from
their process groups over the same batches (the other parts' CPU is in the first row's note).
"""

from __future__ import annotations

import resource
import time

from rq import Queue
from rq.serializers import JSONSerializer

from bench.cycles import Cycles
from bench.jobs import DONE_KEY
from bench.measurement import Config, Result, Row
from bench.processes import group_cpu_seconds
from bench.redis_db import flush
from bench.stack import Proc, Stack
from bench.stats import ratio

RAW_QUEUE = "bench-raw"
TARGET = 0.25
CPU_TARGET_MS = 10.0


def _cpu(stack: Stack, workers: list[Proc]) -> dict[str, float]:
    """CPU seconds so far of each part of the system. The Redis server's is its whole `INFO cpu`:
    meaningful on a server of the bench's own (`--redis-url`), inflated by other clients on a shared one."""
    parts = {
        "parley workers": workers,
        "parley serve": [p for p in stack.procs if p.name.endswith("parley-serve")],
        "Web API stand-in": [p for p in stack.procs if p.name.endswith("standin")],
    }
    out = {name: sum(group_cpu_seconds(p.pid) for p in procs) for name, procs in parts.items()}
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["bench (answerers)"] = usage.ru_utime + usage.ru_stime
    out["Redis server"] = _redis_cpu(stack)
    return out


def _redis_cpu(stack: Stack) -> float:
    info = stack.client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _raw_batch(stack: Stack, n: int) -> float:
    r = stack.client
    raw = Queue(RAW_QUEUE, connection=r, serializer=JSONSerializer)
    r.set(DONE_KEY, 0)
    t0 = time.perf_counter()
    raw.enqueue_many([Queue.prepare_data("bench.jobs.noop", result_ttl=600) for _ in range(n)])
    deadline = time.monotonic() + 120
    while int(r.get(DONE_KEY) or 0) < n:
        if time.monotonic() > deadline:
            raise RuntimeError("raw jobs stalled")
        time.sleep(0.005)
    return n / (time.perf_counter() - t0)


def measure(stack: Stack, cfg: Config) -> Result:
    runs_per_batch = cfg.pick(40, 200)
    result = Result()
    for workers in (1, 2):
        flush(stack.client)
        cycles = Cycles(stack.redis_url, stack.serve_port)
        pw = stack.parley_workers(workers, "simple")
        rw = stack.raw_workers(RAW_QUEUE, workers, "simple")
        parley: list[float] = []
        raw: list[float] = []
        cpu: dict[str, float] = {}  # CPU ms per run (Parley) or per job (raw), summed over rounds
        try:
            cycles.batch(10)  # warm
            _raw_batch(stack, 50)
            for rnd in range(cfg.rounds):
                for side in ("parley", "raw") if rnd % 2 == 0 else ("raw", "parley"):
                    if side == "parley":
                        m = runs_per_batch * workers
                        before = _cpu(stack, pw)
                        parley.append(cycles.batch(m))
                        for name, sec in _cpu(stack, pw).items():
                            cpu[name] = cpu.get(name, 0.0) + 1000 * (sec - before[name]) / m / cfg.rounds
                    else:
                        n = 4 * runs_per_batch * workers
                        before_raw = sum(group_cpu_seconds(p.pid) for p in rw)
                        before_redis = _redis_cpu(stack)
                        raw.append(_raw_batch(stack, n))
                        spent = sum(group_cpu_seconds(p.pid) for p in rw) - before_raw
                        key = "raw workers, per job"
                        cpu[key] = cpu.get(key, 0.0) + 1000 * spent / n / cfg.rounds
                        key = "raw Redis server, per job"
                        cpu[key] = cpu.get(key, 0.0) + 1000 * (_redis_cpu(stack) - before_redis) / n / cfg.rounds
                    time.sleep(0.2)
        finally:
            stack.stop(pw + rw)
        parley.sort()
        raw.sort()
        p, b = parley[len(parley) // 2], raw[len(raw) // 2]
        result.detail[f"workers_{workers}"] = {
            "parley_runs_per_s": parley,
            "raw_jobs_per_s": raw,
            "cpu_ms_per_run": {k: round(v, 2) for k, v in cpu.items()},
        }
        q = ratio(p, b)
        per_run = ", ".join(f"{k} {v:.1f}" for k, v in cpu.items() if not k.startswith("raw"))
        result.rows.append(
            Row(
                "4 full cycle",
                f"{workers} worker{'s' if workers > 1 else ''}",
                "runs/s vs jobs/s",
                p,
                b,
                q,
                f">= {TARGET:.2f}x",
                q is not None and q >= TARGET,
                f"{parley[0]:.0f}-{parley[-1]:.0f} | {raw[0]:.0f}-{raw[-1]:.0f}",
                f"CPU ms/run: {per_run}; raw {cpu.get('raw workers, per job', 0):.2f} ms/job"
                f" (Redis {cpu.get('raw Redis server, per job', 0):.2f})",
            )
        )
        own = cpu.get("parley workers", 0.0) + cpu.get("parley serve", 0.0)
        result.rows.append(
            Row(
                "4 full cycle",
                f"{workers} worker{'s' if workers > 1 else ''}",
                "CPU ms/run, workers + serve",
                own,
                target=f"<= {CPU_TARGET_MS:.0f} ms",
                met=own <= CPU_TARGET_MS,
                note=f"workers {cpu.get('parley workers', 0):.1f} + serve {cpu.get('parley serve', 0):.1f}",
            )
        )
    return result
