"""4. Full-cycle throughput: runs/s for start → ask → answer → final, against raw RQ trivial jobs/s.

Parley: M `bench-cycle` runs are created and enqueued at once (as `/parley` does,
with no thread yet, so the worker posts the thread root); real `parley worker`
processes run them until they park on their question; answerer threads click
Submit on each question through `parley serve` as soon as it appears; the workers
resume the runs, which post their final answer. Timed from the first create to
the last run succeeding. Baseline: the same number of raw RQ workers (same class,
same Redis) drain a batch of trivial jobs enqueued at once.
"""

from __future__ import annotations

import json
import resource
import threading
import time

from rq import Queue
from rq.serializers import JSONSerializer

from bench.agents import AGENT, three_item_request
from bench.jobs import DONE_KEY
from bench.measurement import Config, Result, Row
from bench.processes import group_cpu_seconds
from bench.redis_db import flush
from bench.seed import Seeded, SubmitClicks
from bench.stack import Poster, Proc, Stack
from bench.stats import ratio
from bot.playground.workspace import TEAM_ID
from workers.runtime.queues import enqueue_run, queue
from workers.store import keys
from workers.store.records import RunStatus
from workers.store.runs import RunStore

RAW_QUEUE = "bench-raw"
TARGET = 1 / 3
ANSWERERS = 4


def _cpu(stack: Stack, workers: list[Proc]) -> dict[str, float]:
    """CPU seconds so far of each part of the system (the Redis server is shared, so it is left out)."""
    parts = {
        "parley workers": workers,
        "parley serve": [p for p in stack.procs if p.name.endswith("parley-serve")],
        "Web API stand-in": [p for p in stack.procs if p.name.endswith("standin")],
    }
    out = {name: sum(group_cpu_seconds(p.pid) for p in procs) for name, procs in parts.items()}
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["bench (answerers)"] = usage.ru_utime + usage.ru_stime
    return out


def _parley_batch(stack: Stack, store: RunStore, clicks: SubmitClicks, m: int) -> float:
    r = stack.client
    pq = queue(r)
    done_before = store.count(RunStatus.SUCCEEDED)
    claimed: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()
    failures: list[str] = []

    def answerer() -> None:
        poster = Poster(stack.serve_port)
        while not stop.is_set():
            mine = []
            for run_id in store.list_ids(RunStatus.PAUSED, limit=50):
                with lock:
                    if run_id not in claimed:
                        claimed.add(run_id)
                        mine.append(run_id)
                if len(mine) >= 4:
                    break
            if not mine:
                time.sleep(0.005)
                continue
            for run_id in mine:
                iid, conv, user = (
                    x.decode() for x in r.hmget(keys.run(run_id), "interrupt", "conversation", "started_by")
                )
                msg = json.loads(r.hget(keys.interrupt(iid), "message") or b"{}")
                thread = json.loads(conv)
                run = Seeded(run_id, iid, user, thread["channel"], thread["thread_ts"], msg.get("ts", ""))
                if poster.post(clicks.body(run)) != 200:
                    failures.append(run_id)
        poster.close()

    threads = [threading.Thread(target=answerer, daemon=True) for _ in range(ANSWERERS)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    for i in range(m):
        run = store.create(
            AGENT, "", f"U0B{i % 100:03d}", {"host": "slack", "team": TEAM_ID, "channel": f"C0BENCH{i % 64:02d}"}
        )
        enqueue_run(pq, run.id, run.job)
    deadline = time.monotonic() + 120
    while store.count(RunStatus.SUCCEEDED) < done_before + m:
        if time.monotonic() > deadline or failures:
            stop.set()
            raise RuntimeError(f"full cycle stalled: {store.counts()}, refused clicks {failures[:3]}")
        time.sleep(0.005)
    elapsed = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join()
    return m / elapsed


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
    clicks = SubmitClicks(three_item_request())
    for workers in (1, 2):
        flush(stack.client)
        store = RunStore(stack.client)
        pw = stack.parley_workers(workers, "simple")
        rw = stack.raw_workers(RAW_QUEUE, workers, "simple")
        parley: list[float] = []
        raw: list[float] = []
        cpu: dict[str, float] = {}  # CPU ms per run (Parley) or per job (raw), summed over rounds
        try:
            _parley_batch(stack, store, clicks, 10)  # warm
            _raw_batch(stack, 50)
            for rnd in range(cfg.rounds):
                for side in ("parley", "raw") if rnd % 2 == 0 else ("raw", "parley"):
                    if side == "parley":
                        m = runs_per_batch * workers
                        before = _cpu(stack, pw)
                        parley.append(_parley_batch(stack, store, clicks, m))
                        for name, sec in _cpu(stack, pw).items():
                            cpu[name] = cpu.get(name, 0.0) + 1000 * (sec - before[name]) / m / cfg.rounds
                    else:
                        n = 4 * runs_per_batch * workers
                        before_raw = sum(group_cpu_seconds(p.pid) for p in rw)
                        raw.append(_raw_batch(stack, n))
                        spent = sum(group_cpu_seconds(p.pid) for p in rw) - before_raw
                        key = "raw workers, per job"
                        cpu[key] = cpu.get(key, 0.0) + 1000 * spent / n / cfg.rounds
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
                ">= 0.33x",
                q is not None and q >= TARGET,
                f"{parley[0]:.0f}-{parley[-1]:.0f} | {raw[0]:.0f}-{raw[-1]:.0f}",
                f"CPU ms/run: {per_run}; raw {cpu.get('raw workers, per job', 0):.2f} ms/job",
            )
        )
    return result
