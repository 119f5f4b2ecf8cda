"""6. Inbox scale: the admin's first page of paused runs and one user's "waiting on you", as runs pile up.

Paused runs are seeded (the store's own writes, pipelined) up to 1,000, 10,000 and
100,000 (`--quick` stops at 10,000). One user is asked on every tenth run, the rest
are spread over 100 users, so that user's list is full at every size. Timed in
this process on the same Redis, each call alternating with the other:
- admin: `workers.runtime.admin.list_runs(status=PAUSED)`, first page of 20;
- waiting: `RunStore.waiting_on(user)` (20), then each question's interrupt and run,
  as the App Home's "Waiting on you" reads them (without the Web API's permalink).
Target: each call's median at the largest size within 2x of its median at 1,000.
"""

from __future__ import annotations

import time

from bench.agents import AGENT, three_item_request
from bench.measurement import Config, Result, Row
from bench.redis_db import flush
from bench.seed import seed_paused
from bench.stack import Stack
from bench.stats import Dist, ratio
from workers.runtime import admin
from workers.runtime.wiring import Runtime
from workers.store.records import RunStatus

INBOX_USER = "U0INBOX"
TARGET = 2.0


def _user_for(i: int) -> str:
    return INBOX_USER if i % 10 == 0 else f"U0B{i % 100:03d}"


def measure(stack: Stack, cfg: Config) -> Result:
    sizes = cfg.pick((1_000, 10_000), (1_000, 10_000, 100_000))
    reps = cfg.pick(150, 400)
    r = stack.client
    flush(r)
    rt = Runtime.build(r)
    request = three_item_request()
    have = 0
    dists: dict[tuple[str, int], Dist] = {}
    seed_seconds: dict[int, float] = {}

    def admin_page() -> None:
        page = admin.list_runs(rt, RunStatus.PAUSED, page=0, per_page=20)
        assert len(page.runs) == 20

    def waiting() -> None:
        found = 0
        for iid in rt.store.waiting_on(INBOX_USER, limit=20):
            q = rt.store.interrupt(iid)
            if q is not None and rt.store.find(q.run_id) is not None:
                found += 1
        assert found == 20

    calls = {"admin first page": admin_page, "waiting on you": waiting}
    for size in sizes:
        t0 = time.perf_counter()
        n = size - have
        messages = [
            [f"C0BENCH{i % 64:02d}", f"{1_700_000_000 + i}.000100", f"{1_700_000_000 + i}.000200"]
            for i in range(have, size)
        ]
        seed_paused(rt.store, n, request, agent=AGENT, user_for=_user_for, messages=messages, batch=1000, start=have)
        have = size
        seed_seconds[size] = time.perf_counter() - t0
        assert rt.store.count(RunStatus.PAUSED) == size
        for fn in calls.values():  # warm
            for _ in range(10):
                fn()
        for name in calls:
            dists[(name, size)] = Dist()
        per_round = max(reps // cfg.rounds, 1)
        for rnd in range(cfg.rounds):
            lat: dict[str, list[float]] = {name: [] for name in calls}
            for _ in range(per_round):
                for name, fn in calls.items() if rnd % 2 == 0 else reversed(calls.items()):
                    t = time.perf_counter()
                    fn()
                    lat[name].append((time.perf_counter() - t) * 1000)
            for name in calls:
                dists[(name, size)].add_round(lat[name])
    flush(r)
    result = Result(
        detail={
            "seed_seconds": seed_seconds,
            "dists": {f"{name}@{size}": d.summary() for (name, size), d in dists.items()},
        }
    )
    lo, hi = sizes[0], sizes[-1]
    for name in calls:
        for size in sizes:
            d = dists[(name, size)]
            base = dists[(name, lo)]
            q = ratio(d.p50, base.p50)
            last = size == hi
            result.rows.append(
                Row(
                    "6 inbox scale",
                    f"{name} @ {size:,}",
                    "p50 ms",
                    d.p50,
                    base.p50,
                    q,
                    f"<= {TARGET:g}x" if last else "",
                    (q is not None and q <= TARGET) if last else None,
                    d.spread(),
                    f"p99 {d.p99:.2f} ms",
                )
            )
    return result
