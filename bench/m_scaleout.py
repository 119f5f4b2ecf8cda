"""11. Scale-out: two `parley serve` replicas behind HAProxy, two workers, and the ceiling of one Redis.

Everything here runs against a private `redis-server` (see `bench.redis_ceiling`), so the
server's `INFO commandstats` counts only this system's commands.

- **Cycles through the proxy.** Full cycles as in measurement 4 (create + enqueue as `/parley`
  does; two real `parley worker`s park each run on its question; answerer threads click Submit
  through HAProxy, round-robin over two real `parley serve` replicas; the workers resume and
  finish the runs). Side by side, alternating: the same system with one replica and no proxy.
  Every ack must be 200 and every run must succeed; each replica's `/metrics` says how many
  Submits it acked.
- **The same question submitted to both replicas at once.** For each of K paused runs, two
  Submit clicks (distinct clicks, as a double click makes) are POSTed at the same moment, one
  straight to each replica. Exactly one is accepted: the replicas' metrics count K answers
  (the second click, the same person's same answers, is that acceptance again: acked, not
  counted), each run's history has one `answered` entry, and its agent resumed once.
- **Ceiling of one Redis.** Commands per cycle from `commandstats` deltas over a batch (less
  the answerers' own reads and the bench agent's two writes, counted here), and Redis's raw
  rate from `redis-benchmark` on the same server: ceiling = ops/s ÷ commands per cycle. A
  second estimate divides a second of Redis CPU by the server time per cycle (`usec`).
"""

from __future__ import annotations

import threading
import time
import urllib.request
from typing import Any

import redis
from prometheus_client.parser import text_string_to_metric_families
from rq import Queue, Worker
from rq.serializers import JSONSerializer

from bench import redis_ceiling
from bench.agents import AGENT, three_item_request
from bench.cycles import CountingRedis, Cycles
from bench.jobs import DONE_KEY
from bench.measurement import Config, Result, Row
from bench.processes import Proc, free_port, http_ok, python_argv, wait_until
from bench.seed import SubmitClicks, seeded
from bench.stack import Poster, Stack
from bench.stats import ratio
from bot.playground.workspace import TEAM_ID
from workers.runtime.queues import enqueue_run, queue
from workers.store.records import RunStatus
from workers.store.runs import RunStore

TOOLS = redis_ceiling.TOOLS
"""HAProxy, a private redis-server and redis-benchmark: without one, this measurement is skipped."""
RAW_QUEUE = "bench-raw"
BENCH_AGENT_COMMANDS = 2  # bench.agents: SET bench:asked (first execution), RPUSH bench:resumed


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(port: int, name: str, **labels: str) -> float:
    return scrape(port).get((name, tuple(sorted(labels.items()))), 0.0)


def start_replicas(stack: Stack, url: str, n: int) -> tuple[list[Proc], list[int]]:
    procs, ports = [], [free_port() for _ in range(n)]
    for i, port in enumerate(ports):
        argv = python_argv("-m", "parley.cli", "serve", "--port", str(port))
        procs.append(stack.start_process(f"replica-{i + 1}", argv, REDIS_URL=url))
    for proc, port in zip(procs, ports, strict=True):
        wait_until(lambda p=port: http_ok(f"http://127.0.0.1:{p}/healthz"), 30, proc.name, proc)
    return procs, ports


def start_workers(stack: Stack, url: str, client: redis.Redis, n: int) -> list[Proc]:
    argv = python_argv("-m", "parley.cli", "worker")
    procs = [stack.start_process(f"scaleout-worker-{i + 1}", argv, REDIS_URL=url) for i in range(n)]
    q = queue(client)
    wait_until(lambda: Worker.count(queue=q) >= n, 30, f"{n} parley workers", procs[0])
    time.sleep(0.2)
    return procs


def double_submit(client: redis.Redis, replicas: list[int], k: int) -> dict[str, Any]:
    """K paused runs, each answered by two clicks sent at once, one to each replica."""
    store, clicks = RunStore(client), SubmitClicks(three_item_request())
    answered_before = sum(sample(p, "parley_questions_answered_total") for p in replicas)
    refused_before = sum(sample(p, "parley_answer_refusals_total", reason="answered") for p in replicas)
    pq = queue(client)
    ids = []
    for i in range(k):
        run = store.create(AGENT, "", f"U0D{i:03d}", {"host": "slack", "team": TEAM_ID, "channel": "C0BENCH00"})
        enqueue_run(pq, run.id, run.job)
        ids.append(run.id)
    wait_until(lambda: all(store.get(r).status is RunStatus.PAUSED for r in ids), 60, f"{k} runs to park")
    statuses: list[int] = []
    for run_id in ids:
        run = seeded(client, run_id)
        bodies = [clicks.body(run), clicks.body(run)]
        if bodies[0] == bodies[1]:  # the same action_ts would be one click delivered twice
            time.sleep(0.001)
            bodies[1] = clicks.body(run)
        gate = threading.Barrier(2)

        def click(port: int, body: bytes, gate: threading.Barrier = gate) -> None:
            poster = Poster(port)
            gate.wait()
            statuses.append(poster.post(body))
            poster.close()

        pair = [threading.Thread(target=click, args=(p, b)) for p, b in zip(replicas, bodies, strict=True)]
        for t in pair:
            t.start()
        for t in pair:
            t.join()
    wait_until(lambda: all(store.get(r).status is RunStatus.SUCCEEDED for r in ids), 60, f"{k} runs to finish")
    answered_entries = [sum(1 for h in store.history(r) if h.event == "answered") for r in ids]
    resumes = [int(client.llen(f"bench:resumed:{r}")) for r in ids]
    return {
        "questions": k,
        "acks_200": statuses.count(200),
        "clicks": len(statuses),
        "accepted": sum(sample(p, "parley_questions_answered_total") for p in replicas) - answered_before,
        "refused_already_answered": sum(sample(p, "parley_answer_refusals_total", reason="answered") for p in replicas)
        - refused_before,
        "runs_with_one_answered_entry": sum(1 for n in answered_entries if n == 1),
        "runs_resumed_once": sum(1 for n in resumes if n == 1),
    }


def idle_rate(client: redis.Redis, seconds: float) -> dict[str, float]:
    """Commands/s (and Redis µs/s) of the system doing nothing: workers' heartbeats and blocking
    dequeues, the scheduler, the sweep, and the proxy's health checks (each `/healthz` pings Redis)."""
    client.config_resetstat()
    time.sleep(seconds)
    stats = redis_ceiling.commandstats(client)
    return {
        "commands_per_s": (sum(c for c, _ in stats.values()) - 1) / seconds,
        "usec_per_s": sum(u for _, u in stats.values()) / seconds,
    }


def commands_per_cycle(cycles: Cycles, m: int, idle: dict[str, float]) -> dict[str, Any]:
    """Redis commands (and server µs) per full cycle, from `commandstats` deltas over `m` cycles,
    less the bench's own commands and the idle background for as long as the batch took."""
    client = cycles.client
    client.config_resetstat()
    polled_before = cycles.poll.sent
    t0 = time.perf_counter()
    rate = cycles.batch(m)
    stats = redis_ceiling.commandstats(client)
    elapsed = time.perf_counter() - t0
    own = (cycles.poll.sent - polled_before) + BENCH_AGENT_COMMANDS * m + 1  # + the INFO reading the stats
    calls = sum(c for c, _ in stats.values())
    usec = sum(u for _, u in stats.values())
    background = idle["commands_per_s"] * elapsed
    top = sorted(stats.items(), key=lambda kv: -kv[1][0])[:12]
    return {
        "cycles": m,
        "runs_per_s": rate,
        "seconds": elapsed,
        "commands_total": calls,
        "bench_own_commands": own,
        "idle_background_commands": background,
        "commands_per_cycle": (calls - own - background) / m,
        "commands_per_cycle_with_background": (calls - own) / m,
        "redis_usec_per_cycle": (usec - idle["usec_per_s"] * elapsed) / m,
        "top_commands_per_cycle_all_clients": {name: round(c / m, 2) for name, (c, _) in top},
    }


def raw_job_commands(stack: Stack, url: str, client: redis.Redis, n: int, idle_seconds: float) -> dict[str, float]:
    """Redis commands per trivial raw RQ job (one `SimpleWorker`), less its idle background: RQ's own share."""
    argv = python_argv("-m", "bench.rawworker", "--queue", RAW_QUEUE, "--class", "simple")
    proc = stack.start_process("scaleout-raw-worker", argv, REDIS_URL=url)
    raw = Queue(RAW_QUEUE, connection=client, serializer=JSONSerializer)
    try:
        wait_until(lambda: Worker.count(queue=raw) >= 1, 30, "a raw RQ worker", proc)
        idle = idle_rate(client, idle_seconds)
        client.set(DONE_KEY, 0)
        poll = CountingRedis.from_url(url)
        client.config_resetstat()
        t0 = time.perf_counter()
        raw.enqueue_many([Queue.prepare_data("bench.jobs.noop", result_ttl=600) for _ in range(n)])
        wait_until(lambda: int(poll.get(DONE_KEY) or 0) >= n, 120, f"{n} raw jobs", proc)
        stats = redis_ceiling.commandstats(client)
        elapsed = time.perf_counter() - t0
    finally:
        stack.stop([proc])
    calls = sum(c for c, _ in stats.values())
    own = n + poll.sent + 1  # the jobs' own INCRs, the bench's polls of their count, the INFO
    return {"jobs": n, "commands_per_job": (calls - own - idle["commands_per_s"] * elapsed) / n}


def _split(replicas: list[int]) -> list[float]:
    return [sample(p, "parley_submit_ack_seconds_count", surface="submit") for p in replicas]


def measure(stack: Stack, cfg: Config) -> Result:
    result = Result()
    redis_proc, redis_port, client = redis_ceiling.private_redis(stack)
    url = f"redis://127.0.0.1:{redis_port}/1"
    procs: list[Proc] = [redis_proc]
    try:
        replicas, ports = start_replicas(stack, url, 2)
        procs += replicas
        proxy, proxy_port = redis_ceiling.haproxy(stack, ports)
        procs.append(proxy)
        wait_until(lambda: http_ok(f"http://127.0.0.1:{proxy_port}/healthz"), 20, "haproxy", proxy)
        procs += start_workers(stack, url, client, 2)
        through, direct = Cycles(url, proxy_port), Cycles(url, ports[0])
        m = cfg.pick(60, 200)
        through.batch(10)
        direct.batch(10)
        proxied: list[float] = []
        alone: list[float] = []
        for rnd in range(cfg.rounds):
            for side in (through, direct) if rnd % 2 == 0 else (direct, through):
                (proxied if side is through else alone).append(side.batch(m))
        idle = idle_rate(client, cfg.pick(5.0, 10.0))
        before = _split(ports)
        cost = commands_per_cycle(through, m, idle)
        split = [after - b for after, b in zip(_split(ports), before, strict=True)]
        k = cfg.pick(20, 50)
        race = double_submit(client, ports, k)
        stack.stop([w for w in procs if "scaleout-worker" in w.name])
        rq_job = raw_job_commands(stack, url, client, cfg.pick(200, 1000), cfg.pick(3.0, 5.0))
        bench_rates = redis_ceiling.redis_benchmark(redis_port, cfg.pick(50_000, 200_000))
    finally:
        stack.stop(list(reversed(procs)))
    proxied.sort()
    alone.sort()
    p, b = proxied[len(proxied) // 2], alone[len(alone) // 2]
    acks = {**through.statuses}
    all_ok = set(acks) == {200}
    ops = sorted(bench_rates.values())[len(bench_rates) // 2]
    per_cycle = cost["commands_per_cycle"]
    ceiling, by_cpu = ops / per_cycle, 1e6 / cost["redis_usec_per_cycle"]
    # Both clicks are the same person's same answers: the second is that acceptance again (acked,
    # not refused, not counted), so exactly one is accepted whichever replica runs its close first.
    once = race["accepted"] == k
    once = once and race["runs_with_one_answered_entry"] == k and race["runs_resumed_once"] == k
    once = once and race["acks_200"] == race["clicks"] == 2 * k
    result.detail = {
        "runs_per_s_through_haproxy": proxied,
        "runs_per_s_one_replica_direct": alone,
        "ack_statuses_through_haproxy": acks,
        "submits_acked_per_replica": split,
        "idle": idle,
        "commands": cost,
        "double_submit": race,
        "raw_rq_job": rq_job,
        "redis_benchmark_ops_per_s": bench_rates,
        "redis_ceiling_cycles_per_s": {"ops_over_commands": ceiling, "cpu_second_over_usec": by_cpu},
    }
    result.rows += [
        Row(
            "11 scale-out",
            "2 replicas + HAProxy, 2 workers",
            "runs/s vs 1 replica direct",
            p,
            b,
            ratio(p, b),
            "all acks 200, all cycles done",
            all_ok,
            f"{proxied[0]:.0f}-{proxied[-1]:.0f} | {alone[0]:.0f}-{alone[-1]:.0f}",
            f"acks {acks}; Submits per replica {split[0]:.0f}/{split[1]:.0f}",
        ),
        Row(
            "11 scale-out",
            "same question, a Submit to each replica at once",
            "answers accepted per question",
            race["accepted"] / k,
            1.0,
            ratio(race["accepted"] / k, 1.0),
            "exactly 1",
            once,
            "",
            f"{k} questions, 2 clicks each: {race['accepted']:.0f} accepted, "
            f"{race['refused_already_answered']:.0f} refused 'already answered', "
            f"{race['runs_resumed_once']} resumed once",
        ),
        Row(
            "11 Redis ceiling",
            "commands per full cycle",
            "Redis commands",
            per_cycle,
            note=f"{cost['redis_usec_per_cycle']:.0f} us of Redis CPU per cycle; a trivial raw RQ job: "
            f"{rq_job['commands_per_job']:.0f} commands; idle background {idle['commands_per_s']:.0f} commands/s",
        ),
        Row(
            "11 Redis ceiling",
            "one Redis: ops/s / commands per cycle",
            "cycles/s vs redis-benchmark ops/s",
            ceiling,
            ops,
            note=f"by Redis CPU per cycle: {by_cpu:.0f} cycles/s; measured here on 2 shared cores: {p:.0f} runs/s",
        ),
    ]
    return result
