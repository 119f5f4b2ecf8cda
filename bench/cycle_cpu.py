"""`python bench/cycle_cpu.py [--cycles N] [--instructions] [TREE ...]`: a worker's cost per full cycle, in-process.

Measurement 4 (full-cycle throughput) is bound by the worker: with one worker, runs/s over raw
jobs/s is close to a raw job's CPU over a cycle's worker CPU. This measures both sides in one
process, without the HTTP load, the clickers and the other processes sharing the cores:

- Parley: N `bench-cycle` runs created and enqueued with no thread root (`bench.cycles`); an in-process
  `SimpleWorker` (burst) runs their first executions (thread root, question, park); each
  question is answered by a signed Submit click into the bot's WSGI app (not counted: that is
  `parley serve`'s share); the worker runs the resumes (lock, final answer). Only the two
  worker bursts are counted.
- Raw: N trivial jobs (`bench.jobs.noop`) on a queue of their own, drained by RQ's own
  `SimpleWorker` in burst. The Parley side runs the class `parley worker` runs (RQ's, with its
  heartbeat in fewer round trips: `workers.runtime.rq_workers`), so the raw jobs are also run
  on that class and printed beside, to tell its share from the rest.

It prints the cost per cycle, per raw job, and raw / cycle: the throughput ratio a worker-bound
cycle can reach, and (without `--instructions`) the worker's Redis round trips per cycle and per
raw job, counted by its client: the same on every run. `--instructions` counts instructions under
callgrind, collected only around the bursts: the same count on every run, so commits a few
percent apart can be told apart. `--without-agents` serves a workspace without Slack's agent
surfaces (sessions, statuses, plans): the work a tree from before them does, to compare like with like.
Each TREE (default: this checkout) runs in its own process with `PYTHONPATH=TREE`. Its Web API
calls go to a `bench.standin` from this checkout. Redis: `REDIS_URL` on the database `--db` or the URL
names, else the embedded Redis's 14; it is flushed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

HERE = Path(__file__).resolve().parent.parent
SECRET = "cycle-cpu-signing-secret-0123456789"


COUNTING = {"callgrind": False}  # set in the child once the warm-up is done, under `--instructions`
TRIPS = {"on": False, "n": 0}  # Redis round trips of the counted bursts (not under `--instructions`)


class TripsRedis(redis.Redis):
    """The worker's Redis client, counting its round trips while `TRIPS["on"]`: a command sent
    alone, a pipeline sent, or a command a pipeline sends at once (RQ's `WATCH`)."""

    def execute_command(self, *args: Any, **options: Any) -> Any:
        if TRIPS["on"]:
            TRIPS["n"] += 1
        return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> redis.client.Pipeline:
        return TripsPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)


class TripsPipeline(redis.client.Pipeline):
    def execute(self, raise_on_error: bool = True) -> list[Any]:
        if TRIPS["on"] and self.command_stack:
            TRIPS["n"] += 1
        return super().execute(raise_on_error)

    def immediate_execute_command(self, *args: Any, **options: Any) -> Any:
        if TRIPS["on"]:
            TRIPS["n"] += 1
        return super().immediate_execute_command(*args, **options)


def _collecting(on: bool) -> None:
    """Start or stop callgrind's count in this process (`--instructions`); nothing outside valgrind."""
    if COUNTING["callgrind"]:
        subprocess.run(
            ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], check=True, capture_output=True
        )


def _dump() -> None:
    """Close this side's count in a file of its own (`--instructions`)."""
    if COUNTING["callgrind"]:
        subprocess.run(["callgrind_control", "-d", str(os.getpid())], check=True, capture_output=True)


def _burst(worker_for: object) -> float:
    """One counted burst of a fresh worker; its CPU seconds (its round trips are added to `TRIPS`)."""
    worker = worker_for()  # type: ignore[operator]
    _collecting(True)
    TRIPS["on"] = True
    cpu0 = time.process_time()
    worker.work(burst=True, with_scheduler=False, logging_level="WARNING")
    cpu = time.process_time() - cpu0
    TRIPS["on"] = False
    _collecting(False)
    return cpu


def _trips_since(start: int, n: int) -> float:
    return (TRIPS["n"] - start) / n


def _child(cycles: int) -> dict[str, float]:
    """Runs inside the child: the Parley cycles, then the raw jobs, each side's worker bursts counted."""
    import io
    import logging

    from rq import Queue, SimpleWorker
    from rq.serializers import JSONSerializer

    from bench.agents import AGENT, three_item_request
    from bench.seed import SubmitClicks, seeded
    from bench.slack_signing import signed_headers
    from bot.playground.workspace import TEAM_ID
    from bot.wsgi import make_wsgi
    from parley import settings as settings_mod
    from parley.bootstrap import build_runtime, connect_redis, question_config
    from parley.serve import build_bot
    from parley.worker import add_worker_hosts
    from workers.runtime import wiring
    from workers.runtime.host import InteractorRouter
    from workers.runtime.queues import enqueue_run
    from workers.store.records import RunStatus
    from workers.store.runs import RunStore

    logging.disable(logging.CRITICAL)  # no log I/O in the count, on either side
    settings = settings_mod.load()
    client = connect_redis(settings)
    if not os.environ.get("CYCLE_CPU_CALLGRIND"):  # counting would add to the instructions counted
        client = TripsRedis(connection_pool=client.connection_pool)
    client.flushdb()
    runtime = build_runtime(settings, client, InteractorRouter())
    question_config(settings)
    add_worker_hosts(settings, runtime)
    app, _ = build_bot(settings)
    wiring.install(runtime)  # the jobs run on the worker's wiring, as in `parley worker`, not the bot's
    wsgi = make_wsgi(app, client)
    store, clicks = RunStore(client), SubmitClicks(three_item_request())

    worker_class = _parley_worker_class()

    def parley_worker() -> SimpleWorker:
        return worker_class([runtime.queue], connection=client, serializer=JSONSerializer)

    def click(body: bytes) -> None:
        headers = signed_headers(body, SECRET)
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/slack/events",
            "QUERY_STRING": "",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "wsgi.url_scheme": "http",
            "CONTENT_TYPE": "application/x-www-form-urlencoded",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()},
        }
        statuses: list[str] = []
        b"".join(wsgi(environ, lambda status, headers, exc_info=None: statuses.append(status)))
        if not statuses[0].startswith("200"):
            raise SystemExit(f"cycle_cpu: a click was answered {statuses[0]}")

    def parley_batch(n: int) -> float:
        for i in range(n):
            conversation = {"host": "slack", "team": TEAM_ID, "channel": f"C0BENCH{i % 64:02d}"}
            run = store.create(AGENT, "", f"U0B{i % 100:03d}", conversation)
            enqueue_run(runtime.queue, run.id, run.job)
        cpu = _burst(parley_worker)
        paused = store.list_ids(RunStatus.PAUSED, limit=n + 10)
        if len(paused) != n:
            raise SystemExit(f"cycle_cpu: {len(paused)} of {n} runs parked: {store.counts()}")
        for run_id in paused:
            click(clicks.body(seeded(client, run_id)))
        cpu += _burst(parley_worker)
        if store.count(RunStatus.SUCCEEDED) < n:
            raise SystemExit(f"cycle_cpu: runs did not all succeed: {store.counts()}")
        return cpu

    raw = Queue("bench-raw-cpu", connection=client, serializer=JSONSerializer)

    def raw_batch(n: int, cls: type[SimpleWorker] = SimpleWorker) -> float:
        raw.enqueue_many([Queue.prepare_data("bench.jobs.noop", result_ttl=600) for _ in range(n)])
        return _burst(lambda: cls([raw], connection=client, serializer=JSONSerializer))

    parley_batch(10)  # warm, not counted: imports, connections, scripts loaded
    raw_batch(10)
    client.flushdb()
    COUNTING["callgrind"] = bool(os.environ.get("CYCLE_CPU_CALLGRIND"))
    start = TRIPS["n"]
    parley_cpu = parley_batch(cycles)
    cycle_trips, start = _trips_since(start, cycles), TRIPS["n"]
    _dump()
    raw_cpu = raw_batch(cycles)
    job_trips, start = _trips_since(start, cycles), TRIPS["n"]
    _dump()
    result = {"cycle_ms": 1000 * parley_cpu / cycles, "job_ms": 1000 * raw_cpu / cycles}
    if not COUNTING["callgrind"]:
        result |= {"cycle_trips": cycle_trips, "job_trips": job_trips}
    if worker_class is not SimpleWorker:  # how much of the difference is the worker class alone
        result["job_on_parley_class_ms"] = 1000 * raw_batch(cycles, worker_class) / cycles
        if not COUNTING["callgrind"]:
            result["job_on_parley_class_trips"] = _trips_since(start, cycles)
    return result


def _parley_worker_class() -> type:
    """The class `parley worker` runs by default (RQ's `SimpleWorker` in trees from before it had its own)."""
    try:
        from parley.worker import WORKER_CLASSES
    except ImportError:
        from rq import SimpleWorker

        return SimpleWorker
    return WORKER_CLASSES["simple"]


def _run(tree: str, env: dict[str, str], cycles: int, instructions: bool) -> dict[str, float]:
    """One tree's child; with `instructions`, under callgrind, adding `cycle_ir` and `job_ir`
    (the child dumps its count after the Parley side, then after the raw side: `cg.1`, `cg.2`)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", "--cycles", str(cycles)]
    with tempfile.TemporaryDirectory() as tmp:
        if instructions:
            argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={tmp}/cg", *argv]
            env = {**env, "CYCLE_CPU_CALLGRIND": "1"}
        out = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"cycle_cpu: {tree} failed:\n{out.stderr[-3000:]}{out.stdout[-500:]}")
        result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
        if instructions:
            result["cycle_ir"] = _totals(Path(tmp) / "cg.1") / cycles
            result["job_ir"] = _totals(Path(tmp) / "cg.2") / cycles
    return result


def _totals(path: Path) -> int:
    return next(int(line.split()[1]) for line in path.read_text().splitlines() if line.startswith("totals:"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="*", default=[str(HERE)], help="checkouts to compare (default: this one)")
    p.add_argument("--cycles", type=int, default=200)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--db", type=int, default=None)
    p.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    p.add_argument("--without-agents", action="store_true", help="a workspace without Slack's agent surfaces")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(_child(args.cycles)))
        return 0
    if args.instructions and not shutil.which("valgrind"):
        raise SystemExit("cycle_cpu: --instructions needs valgrind (Debian's valgrind package)")
    sys.path.insert(0, str(HERE))
    from bench.processes import free_port
    from bench.redis_db import bench_redis_url

    redis_url = bench_redis_url(db=args.db)  # refuses database 0
    port = free_port()
    standin = subprocess.Popen(
        [sys.executable, "-m", "bench.standin", str(port), *(["--without-agents"] if args.without_agents else [])],
        env={**os.environ, "PYTHONPATH": str(HERE)},
        cwd=HERE,
    )
    results: dict[str, list[dict[str, float]]] = {tree: [] for tree in args.trees}
    try:
        time.sleep(2.0)
        for _ in range(args.rounds):
            for tree in args.trees:
                env = {
                    **{k: v for k, v in os.environ.items() if not k.startswith(("PARLEY_", "SLACK_"))},
                    "PYTHONPATH": str(Path(tree).resolve()),
                    "REDIS_URL": redis_url,
                    "SLACK_BOT_TOKEN": "xoxb-bench-0000",
                    "SLACK_SIGNING_SECRET": SECRET,
                    "SLACK_API_URL": f"http://127.0.0.1:{port}/api/",
                    "PARLEY_AGENTS": "bench.agents",
                    "PARLEY_DATA_DIR": tempfile.mkdtemp(prefix="parley-cycle-cpu-"),
                }
                results[tree].append(_run(tree, env, args.cycles, args.instructions))
    finally:
        standin.terminate()
        standin.wait(10)
    unit, key_cycle, key_job, scale = (
        ("M instructions", "cycle_ir", "job_ir", 1e-6) if args.instructions else ("ms CPU", "cycle_ms", "job_ms", 1.0)
    )
    lacking = ", a workspace without agent surfaces" if args.without_agents else ""
    print(
        f"A worker's cost per full cycle and per raw RQ job, in-process"
        f" ({args.cycles} each x {args.rounds} rounds{lacking})"
    )
    for tree, rounds in results.items():
        cycle = statistics.median(r[key_cycle] for r in rounds)
        job = statistics.median(r[key_job] for r in rounds)
        print(
            f"  {tree}: cycle {cycle * scale:.3f} {unit}, raw job {job * scale:.3f} {unit},"
            f" raw / cycle {job / cycle:.3f}"
        )
        own = [r["job_on_parley_class_ms"] for r in rounds if "job_on_parley_class_ms" in r]
        if own and not args.instructions:
            print(f"    a raw job on parley worker's class: {statistics.median(own):.3f} ms CPU")
        if "cycle_trips" in rounds[0]:
            own_trips = rounds[0].get("job_on_parley_class_trips")
            print(
                f"    Redis round trips of the worker: {rounds[0]['cycle_trips']:.1f} per cycle (the bench agent's"
                f" own two not included), {rounds[0]['job_trips']:.1f} per raw job"
                + (f", {own_trips:.1f} per raw job on parley worker's class" if own_trips is not None else "")
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
