"""5. Footprint: Redis memory per paused run with a 3-item request, beyond the request's own JSON.

Three figures:
- one run a real `parley worker` parked: `MEMORY USAGE ... SAMPLES 0` summed over
  the keys that belong to it alone (run hash, journal, history, interrupt, thread);
- N seeded paused runs: the summed `MEMORY USAGE` of every key in the bench's
  database (so the indexes' share is counted), divided by N;
- the same N runs as the `used_memory` delta (instance-wide, so other databases'
  traffic on a shared server adds noise to this one).
Before the bulk figures, a seeded run is checked field by field against the real one.
The real run's RQ job hash and result (kept for `result_ttl`, 10 minutes) are
reported apart: they expire, the paused run's keys do not.
"""

from __future__ import annotations

import os
import subprocess
import time

import redis

from bench.agents import AGENT, three_item_request
from bench.measurement import Config, Result, Row
from bench.processes import free_port, wait_until
from bench.redis_db import BENCH_DB, flush
from bench.seed import check_fidelity, run_keys, seed_paused
from bench.stack import Stack
from bot.playground.workspace import TEAM_ID
from workers.runtime.queues import enqueue_run, queue
from workers.store import keys
from workers.store.runs import RunStore

TARGET_BYTES = 3072


def memory_of(client: redis.Redis, names: list[str]) -> int:
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.memory_usage(name, samples=0)
    return sum(x or 0 for x in pipe.execute())


def db_bytes(client: redis.Redis) -> int:
    """Summed MEMORY USAGE of every key in this database."""
    total = 0
    batch: list[str] = []
    for name in client.scan_iter(count=2000):
        batch.append(name)
        if len(batch) >= 2000:
            total += memory_of(client, batch)
            batch = []
    return total + memory_of(client, batch)


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def measure(stack: Stack, cfg: Config) -> Result:
    n = cfg.pick(2000, 10_000)
    r = stack.client
    flush(r)
    store = RunStore(r)
    request = three_item_request()
    json_bytes = len(request.model_dump_json().encode())
    procs = stack.parley_workers(1, "simple")
    try:
        run = store.create(AGENT, "", "U0B001", {"host": "slack", "team": TEAM_ID, "channel": "C0BENCH00"})
        enqueue_run(queue(r), run.id, run.job)
        deadline = time.monotonic() + 20
        while r.hget(keys.run(run.id), "status") != b"paused":
            if time.monotonic() > deadline:
                raise TimeoutError("the footprint run did not pause")
            time.sleep(0.005)
    finally:
        stack.stop(procs)
    real_keys = run_keys(r, run.id)
    per_key = {k: memory_of(r, [k]) for k in real_keys}
    real_bytes = sum(per_key.values())
    rq_keys = [k.decode() for k in r.scan_iter(match=f"rq:*{run.job}*")]
    rq_bytes = memory_of(r, rq_keys)
    seeded = seed_paused(
        store, 1, request, agent=AGENT, user_for=lambda i: "U0B002", messages=[["C0BENCH01", "1.000100", "1.000200"]]
    )[0]
    problems = check_fidelity(r, run.id, seeded.run_id)
    seeded_bytes = memory_of(r, run_keys(r, seeded.run_id))

    per_db, per_used = bulk(r, n)
    target = f"<= {TARGET_BYTES} B"

    def row(case: str, total: float, note: str) -> Row:
        beyond = total - json_bytes
        return Row(
            "5 footprint",
            case,
            "B beyond request",
            beyond,
            float(json_bytes),
            beyond / json_bytes,
            target,
            beyond <= TARGET_BYTES,
            note=note,
        )

    rows = [
        row("1 real run, own keys", real_bytes, f"{real_bytes} B in {len(real_keys)} keys"),
        row(f"{n // 1000}k runs, MEMORY USAGE", per_db, f"{per_db:.0f} B/run incl. index entries"),
        row(f"{n // 1000}k runs, used_memory", per_used, f"{per_used:.0f} B/run; shared server, other dbs add noise"),
    ]
    private: dict[str, dict[str, float]] = {}
    configs = {"private Redis": [], "private, listpack<=2048": ["--hash-max-ziplist-value", "2048"]}
    for label, extra in configs.items():
        got = private_bulk(stack, n, extra)
        if got is None:
            break
        private[label] = {"db_bytes_per_run": got[0], "used_memory_per_run": got[1]}
        tuned = "hash-max-listpack-value 2048; " if "listpack" in label else "default config; "
        rows.append(row(f"{n // 1000}k runs, {label}", got[1], f"{got[1]:.0f} B/run used_memory, {tuned}alone"))
    detail = {
        "request_json_bytes": json_bytes,
        "real_run": {"keys": per_key, "bytes": real_bytes},
        "seeded_run_bytes": seeded_bytes,
        "fidelity_problems": problems,
        "rq_transient": {"keys": rq_keys, "bytes": rq_bytes},
        "bulk": {
            "runs": n,
            "db_bytes_per_run": per_db,
            "used_memory_per_run": per_used,
            "index_share_per_run": per_db - seeded_bytes,
        },
        "private_server": private,
    }
    if problems:
        rows[1].note += f"; seeded differs: {problems[:2]}"
    return Result(rows=rows, detail=detail)


def bulk(r: redis.Redis, n: int) -> tuple[float, float]:
    """(summed MEMORY USAGE, used_memory delta) per run over `n` seeded paused runs; leaves the db empty."""
    flush(r)
    time.sleep(0.2)
    before_used, before_db = used_memory(r), db_bytes(r)
    messages = [
        [f"C0BENCH{i % 64:02d}", f"{1_700_000_000 + i}.000100", f"{1_700_000_000 + i}.000200"] for i in range(n)
    ]
    seed_paused(
        RunStore(r), n, three_item_request(), agent=AGENT, user_for=lambda i: f"U0B{i % 100:03d}", messages=messages
    )
    time.sleep(0.2)
    after_used, after_db = used_memory(r), db_bytes(r)
    flush(r)
    return (after_db - before_db) / n, (after_used - before_used) / n


def _server_binary(version: str) -> str | None:
    """A redis-server on PATH of the same version as the bench's server, so the figures compare."""
    for d in os.environ.get("PATH", "").split(os.pathsep):
        path = os.path.join(d, "redis-server")
        if os.access(path, os.X_OK):
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
            if f"v={version} " in out:
                return path
    return None


def private_bulk(stack: Stack, n: int, extra: list[str]) -> tuple[float, float] | None:
    """`bulk` on a private redis-server (same binary, no persistence): used_memory with nobody else's keys."""
    binary = _server_binary(str(stack.client.info("server")["redis_version"]))
    if binary is None:
        return None
    port = free_port()
    proc = stack.start_process(
        "private-redis",
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *extra],
    )
    try:
        client = redis.Redis(port=port, db=BENCH_DB)
        wait_until(lambda: bool(client.ping()), 10, "the private redis-server", proc)
        return bulk(client, n)
    finally:
        stack.stop([proc])
