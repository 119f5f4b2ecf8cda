"""15. What a question, a paused run and a full cycle cost one Redis, with its default settings.

Everything runs against a private `redis-server` with Redis's default encodings (no
`hash-max-listpack-value` change), so `MEMORY USAGE` and `INFO commandstats` count this
system alone. `parley serve` and `parley worker` run as deployed (from `--parley-tree` when given).

- **A pending API question.** `POST /api/v1/questions` shaped like docs/api.md's example (a select
  and a note, an expiry, `context`, `metadata`, an `Idempotency-Key`): the summed `MEMORY USAGE`
  of every key in the database after N questions, less before (one question asked first, so
  the indexes exist), divided by N. RQ's keys are left out (none are made) and so is the
  token's rate log, which belongs to the token and expires with its window; both are reported.
- **A paused agent run.** N runs of `bench-cycle` created and enqueued as `/parley` does, parked
  by a real `parley worker` on a 3-item question: the same delta per run, less the request's
  JSON; RQ's job hashes and results (they expire) and the bench agent's own keys left out.
- **Commands per full cycle.** Measurement 4's cycles (one `parley serve`, two workers),
  from `commandstats` deltas over M cycles, less the bench's own commands and the idle
  background (`bench.m_scaleout`); a trivial raw RQ job's commands beside it; and one Redis's
  ceiling, `redis-benchmark` ops/s divided by commands per cycle.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import httpx
import redis
from rq import Worker

from bench import m_scaleout, redis_ceiling
from bench.agents import AGENT, three_item_request
from bench.cycles import Cycles
from bench.m_footprint import memory_of
from bench.measurement import Config, Result, Row
from bench.processes import Proc, free_port, http_ok, python_argv, wait_until
from bench.stack import Stack
from bot.playground.workspace import TEAM_ID
from workers.questions import tokens
from workers.runtime.queues import enqueue_run, queue
from workers.store import keys
from workers.store.questions import QuestionStore
from workers.store.records import RunStatus
from workers.store.runs import RunStore

TOOLS = {k: v for k, v in redis_ceiling.TOOLS.items() if k != "haproxy"}
QUESTION_TARGET = 3072
RUN_TARGET = 2560
COMMANDS_TARGET = 150


def example_question(i: int) -> dict[str, Any]:
    """docs/api.md's first example, with its own idempotency key."""
    return {
        "channel": "C0GENERAL",
        "request": {
            "reason": "Deploy api v1.4.2 to production?",
            "items": [
                {"id": "decision", "text": "Decision", "type": "select", "options": ["approve", "reject"]},
                {"id": "note", "text": "Note", "type": "free_text", "required": False},
            ],
            "expires_in": 3600,
            "on_expiry": "fail",
        },
        "context": {"service": "api", "version": "v1.4.2", "target": "production"},
        "metadata": {"pipeline": 8812 + i},
    }


def _own(name: bytes) -> bool:
    """A key the measured system keeps: not RQ's (transient), not the bench's, not a rate log."""
    return not name.startswith((b"rq:", b"bench:", keys.api_rate("").encode()))


def family(name: bytes) -> str:
    """A key's kind: its name with each id (a run, a question, a user, a hash) as `*`."""
    parts = name.decode(errors="replace").split(":")
    return ":".join(p if p.isalpha() or p in ("parley", "idx") else "*" for p in parts)


def split_bytes(client: redis.Redis, families: dict[str, int] | None = None) -> tuple[int, int]:
    """(summed MEMORY USAGE of the system's own keys, of the rest) in this database; each family's
    bytes (less what `families` held before) added to `families`."""
    names = list(client.scan_iter(count=2000))
    own = [n for n in names if _own(n)]
    rest = [n for n in names if not _own(n)]
    if families is not None:
        sizes = []
        for lo in range(0, len(names), 2000):
            sizes += [memory_of(client, [n]) for n in names[lo : lo + 2000]]
        for name, size in zip(names, sizes, strict=True):
            families[family(name)] = families.get(family(name), 0) + size
    return memory_of(client, own), memory_of(client, rest)


def key_breakdown(client: redis.Redis, run_id: str) -> dict[str, Any]:
    """Each key of one run and its question: bytes, encoding, and the longest hash values."""
    iid = client.hget(keys.run(run_id), "interrupt")
    names = [keys.run(run_id), keys.journal(run_id), keys.history(run_id), keys.api_question(run_id)]
    if iid:
        names.append(keys.interrupt(iid.decode()))
    out: dict[str, Any] = {}
    for name in names:
        kind = client.type(name).decode()
        if kind == "none":
            continue
        entry: dict[str, Any] = {
            "bytes": client.memory_usage(name, samples=0),
            "encoding": client.object("encoding", name),
        }
        if kind == "hash":
            fields = {k.decode(): len(v) for k, v in client.hgetall(name).items()}
            entry["fields"] = len(fields)
            entry["value_bytes"] = sum(fields.values())
            entry["over_64"] = {k: n for k, n in fields.items() if n > 64}
        elif kind == "list":
            entry["entries"] = [len(v) for v in client.lrange(name, 0, -1)]
        out[name] = entry
    return out


def start_serve(stack: Stack, url: str) -> tuple[Proc, int]:
    port = free_port()
    proc = stack.start_process(
        "parley-serve-cost", python_argv("-m", "parley.cli", "serve", "--port", str(port)), REDIS_URL=url
    )
    wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/healthz"), 30, "parley serve", proc)
    return proc, port


def start_workers(stack: Stack, url: str, client: redis.Redis, n: int) -> list[Proc]:
    argv = python_argv("-m", "parley.cli", "worker")
    procs = [stack.start_process(f"parley-worker-cost-{i + 1}", argv, REDIS_URL=url) for i in range(n)]
    wait_until(lambda: Worker.count(queue=queue(client)) >= n, 30, f"{n} parley workers", procs[0])
    time.sleep(0.2)
    return procs


def question_bytes(client: redis.Redis, port: int, n: int) -> dict[str, Any]:
    token = tokens.create(
        QuestionStore(client), f"bench-{secrets.token_hex(3)}", ["ask"], rate_limit=10**9, open_questions=10**9
    )
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token.token}"})

    def ask(i: int) -> str:
        resp = http.post("/api/v1/questions", json=example_question(i), headers={"Idempotency-Key": f"deploy-{i}"})
        if resp.status_code != 201:
            raise RuntimeError(f"the API refused a question: {resp.status_code} {resp.text[:300]}")
        return str(resp.json()["id"])

    try:
        first = ask(0)
        time.sleep(0.2)
        before: dict[str, int] = {}
        own0, rest0 = split_bytes(client, before)
        for i in range(1, n + 1):
            ask(i)
        time.sleep(0.2)
        after: dict[str, int] = {}
        own1, rest1 = split_bytes(client, after)
    finally:
        http.close()
    return {
        "questions": n,
        "bytes_per_question": (own1 - own0) / n,
        "rate_log_and_other_bytes_per_question": (rest1 - rest0) / n,
        "one_question": key_breakdown(client, first),
        "per_question_by_family": {k: round((v - before.get(k, 0)) / n) for k, v in sorted(after.items())},
    }


def run_bytes(client: redis.Redis, n: int) -> dict[str, Any]:
    store, pq = RunStore(client), queue(client)
    request_json = len(three_item_request().model_dump_json().encode())

    def park(count: int, offset: int) -> list[str]:
        ids = []
        for i in range(count):
            conversation = {"host": "slack", "team": TEAM_ID, "channel": f"C0BENCH{(offset + i) % 64:02d}"}
            run = store.create(AGENT, "", f"U0B{(offset + i) % 100:03d}", conversation)
            enqueue_run(pq, run.id, run.job)
            ids.append(run.id)
        wait_until(lambda: store.count(RunStatus.PAUSED) >= offset + count, 120, f"{count} runs to park")
        return ids

    first = park(1, 0)[0]
    time.sleep(0.2)
    before: dict[str, int] = {}
    own0, _ = split_bytes(client, before)
    park(n, 1)
    time.sleep(0.2)
    after: dict[str, int] = {}
    own1, _ = split_bytes(client, after)
    per_run = (own1 - own0) / n
    return {
        "runs": n,
        "request_json_bytes": request_json,
        "bytes_per_run": per_run,
        "bytes_per_run_beyond_request": per_run - request_json,
        "one_run": key_breakdown(client, first),
        "per_run_by_family": {k: round((v - before.get(k, 0)) / n) for k, v in sorted(after.items())},
    }


def measure(stack: Stack, cfg: Config) -> Result:
    redis_proc, redis_port, client = redis_ceiling.private_redis(stack, tuned=False)
    url = f"redis://127.0.0.1:{redis_port}/1"
    procs: list[Proc] = [redis_proc]
    n = cfg.pick(200, 1000)
    try:
        serve, port = start_serve(stack, url)
        procs.append(serve)
        asked = question_bytes(client, port, n)
        client.flushdb()
        procs += start_workers(stack, url, client, 2)
        parked = run_bytes(client, n)
        client.flushdb()
        cycles = Cycles(url, port)
        cycles.batch(10)
        m = cfg.pick(100, 300)
        rates = [cycles.batch(m) for _ in range(cfg.rounds)]
        idle = m_scaleout.idle_rate(client, cfg.pick(5.0, 10.0))
        cost = m_scaleout.commands_per_cycle(cycles, m, idle)
        stack.stop([p for p in procs if "parley-worker" in p.name])
        rq_job = m_scaleout.raw_job_commands(stack, url, client, cfg.pick(200, 1000), cfg.pick(3.0, 5.0))
        ops_rates = redis_ceiling.redis_benchmark(redis_port, cfg.pick(50_000, 200_000))
    finally:
        stack.stop(list(reversed(procs)))
    ops = sorted(ops_rates.values())[len(ops_rates) // 2]
    per_cycle = cost["commands_per_cycle"]
    by_cpu = 1e6 / cost["redis_usec_per_cycle"]
    q, r = asked["bytes_per_question"], parked["bytes_per_run_beyond_request"]
    rows = [
        Row(
            "15 Redis cost",
            f"pending API question, {n} asked",
            "B per question",
            q,
            target=f"<= {QUESTION_TARGET} B",
            met=q <= QUESTION_TARGET,
            note=f"default encodings, every key; token rate log apart: "
            f"{asked['rate_log_and_other_bytes_per_question']:.0f} B/question",
        ),
        Row(
            "15 Redis cost",
            f"paused agent run, {n} parked",
            "B beyond request",
            r,
            float(parked["request_json_bytes"]),
            r / parked["request_json_bytes"],
            f"<= {RUN_TARGET} B",
            r <= RUN_TARGET,
            note=f"default encodings, every key incl. indexes; {parked['bytes_per_run']:.0f} B/run in all",
        ),
        Row(
            "15 Redis cost",
            "commands per full cycle",
            "Redis commands",
            per_cycle,
            rq_job["commands_per_job"] * 2,
            per_cycle / (rq_job["commands_per_job"] * 2),
            f"<= {COMMANDS_TARGET}",
            per_cycle <= COMMANDS_TARGET,
            note=f"baseline: two raw RQ jobs; {cost['redis_usec_per_cycle']:.0f} us of Redis CPU per cycle; "
            f"{sorted(rates)[len(rates) // 2]:.0f} runs/s",
        ),
        Row(
            "15 Redis cost",
            "one Redis: ops/s / commands per cycle",
            "cycles/s vs redis-benchmark ops/s",
            ops / per_cycle,
            ops,
            note=f"by Redis CPU per cycle: {by_cpu:.0f} cycles/s",
        ),
    ]
    detail = {
        "question": asked,
        "run": parked,
        "commands": cost,
        "idle": idle,
        "raw_rq_job": rq_job,
        "redis_benchmark_ops_per_s": ops_rates,
        "runs_per_s": rates,
    }
    return Result(rows=rows, detail=detail)
