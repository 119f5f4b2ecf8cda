"""1. The ack path: signed Submit clicks to `parley serve` against a bare bolt app on the same stack.

Each Parley click is a valid first answer to its own paused run, so every request
does the whole ack path: verify the signature, read the stored request, decode
`state.values`, validate, close the question atomically, enqueue the resume, ack;
then the lazy listener locks the question message through the Web API stand-in.
The bare app's listener does one SET and one RQ enqueue, then acks. Both run under
the same server (uvicorn, bolt on a2wsgi's thread pool) and bolt settings; no worker consumes either queue.

Closed loop: `c` client threads each keep one keep-alive connection and send the
next click as soon as the last one is answered. Rounds alternate which side goes
first; latencies are pooled over rounds and the per-round medians give the spread.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

from bench.agents import AGENT, three_item_request
from bench.measurement import Config, Result, Row
from bench.redis_db import flush
from bench.seed import SubmitClicks, seed_paused
from bench.stack import Poster, Stack
from bench.stats import Dist, ratio
from workers.store import ids
from workers.store.records import RunStatus
from workers.store.runs import RunStore

CONCURRENCY = (1, 16, 64)
TARGET = 1.5


def load(port: int, bodies: list[bytes], c: int) -> tuple[list[float], float, int]:
    """Send `bodies` with `c` threads; returns (latencies in ms, elapsed seconds, non-200 responses)."""
    lat: list[float] = []
    bad = [0]
    counter = itertools.count()
    lock = threading.Lock()
    start = threading.Barrier(c + 1)

    def client() -> None:
        poster = Poster(port)
        mine: list[float] = []
        start.wait()
        while (i := next(counter)) < len(bodies):
            t0 = time.perf_counter()
            status = poster.post(bodies[i])
            mine.append((time.perf_counter() - t0) * 1000)
            if status != 200:
                with lock:
                    bad[0] += 1
        poster.close()
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(c)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return lat, time.perf_counter() - t0, bad[0]


def measure(stack: Stack, cfg: Config) -> Result:
    counts = cfg.pick({1: 100, 16: 224, 64: 384}, {1: 300, 16: 1200, 64: 1920})
    warm = 64
    total = cfg.rounds * sum(counts.values()) + warm
    flush(stack.client)
    store = RunStore(stack.client)
    request = three_item_request()
    messages = stack.seed_messages(total)
    runs = seed_paused(store, total, request, agent=AGENT, user_for=lambda i: f"U0B{i % 100:03d}", messages=messages)
    clicks = SubmitClicks(request)
    parley_bodies = iter([clicks.body(r) for r in runs])
    # the bare app gets clicks of the same shape and size, on questions that do not exist
    fake = [replace(r, run_id=ids.new_id(ids.RUN), iid=ids.new_question_id()) for r in runs]
    bare_bodies = iter([clicks.body(r) for r in fake])

    def take(it: Iterator[bytes], n: int) -> list[bytes]:
        return list(itertools.islice(it, n))

    # warm both servers: thread pools, bolt's one auth.test, Lua scripts, connection pools
    load(stack.serve_port, take(parley_bodies, warm), 8)
    load(stack.bare_port, take(bare_bodies, warm), 8)
    time.sleep(0.5)

    dists = {(side, c): Dist() for side in ("parley", "bare") for c in CONCURRENCY}
    rps: dict[tuple[str, int], list[float]] = {k: [] for k in dists}
    errors = 0
    for rnd in range(cfg.rounds):
        for c in CONCURRENCY:
            order = ("parley", "bare") if (rnd + c) % 2 == 0 else ("bare", "parley")
            for side in order:
                port, it = (stack.serve_port, parley_bodies) if side == "parley" else (stack.bare_port, bare_bodies)
                lat, elapsed, bad = load(port, take(it, counts[c]), c)
                errors += bad
                dists[(side, c)].add_round(lat)
                rps[(side, c)].append(len(lat) / elapsed)
                time.sleep(0.3)  # let the lazy listeners finish before the other side starts

    time.sleep(1.0)
    accepted = store.count(RunStatus.QUEUED)
    answered = total
    result = Result(
        detail={
            "counts": counts,
            "rounds": cfg.rounds,
            "http_errors": errors,
            "runs_accepted": accepted,
            "clicks_sent": answered,
            "lock_updates": len(stack.calls("chat.update", 0)),
        }
    )
    for c in CONCURRENCY:
        p, b = dists[("parley", c)], dists[("bare", c)]
        pr, br = sorted(rps[("parley", c)]), sorted(rps[("bare", c)])
        p.extra["rps_median"] = pr[len(pr) // 2]
        b.extra["rps_median"] = br[len(br) // 2]
        result.detail[f"c{c}"] = {"parley": p.summary(), "bare": b.summary()}
        r99 = ratio(p.p99, b.p99)
        result.rows += [
            Row(
                "1 ack path",
                f"c={c}",
                "p50 ms",
                p.p50,
                b.p50,
                ratio(p.p50, b.p50),
                spread=f"{p.spread()} | {b.spread()}",
            ),
            Row(
                "1 ack path", f"c={c}", "p99 ms", p.p99, b.p99, r99, f"<= {TARGET}x", r99 is not None and r99 <= TARGET
            ),
            Row(
                "1 ack path",
                f"c={c}",
                "req/s",
                p.extra["rps_median"],
                b.extra["rps_median"],
                ratio(p.extra["rps_median"], b.extra["rps_median"]),
                spread=f"{pr[0]:.0f}-{pr[-1]:.0f} | {br[0]:.0f}-{br[-1]:.0f}",
            ),
        ]
    if errors or accepted != answered:
        result.rows[0].note = f"{errors} HTTP errors; {accepted}/{answered} answers accepted"
    return result
