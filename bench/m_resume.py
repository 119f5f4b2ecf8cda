"""2. Resume latency: Submit POST → the agent's code running again, against POST → SET + enqueue → raw job start.

Parley: a signed Submit click to `parley serve` answers a paused `bench-cycle` run;
a real `parley worker` replays it, and the agent pushes the time right after its
`run.ask` returns. Baseline: the same click to the bare bolt app, whose listener
does SET + enqueue; a raw RQ worker of the same class runs `bench.jobs.mark`, which
pushes the time it starts. Clicks are sent one at a time to idle workers, and
Parley's next click waits until the previous run has finished (its final post
included), so no sample queues behind another.
"""

from __future__ import annotations

import time
from dataclasses import replace

from bench.agents import AGENT, three_item_request
from bench.bare import BARE_QUEUE
from bench.measurement import Config, Result, Row
from bench.redis_db import flush
from bench.seed import Seeded, SubmitClicks, seed_paused
from bench.stack import Poster, Stack
from bench.stats import Dist, ratio
from workers.store import ids, keys
from workers.store.runs import RunStore

TARGET_MS = 5.0


def _sample_parley(stack: Stack, poster: Poster, clicks: SubmitClicks, run: Seeded) -> float:
    body = clicks.body(run)
    t0 = time.time()
    if poster.post(body) != 200:
        raise RuntimeError("parley serve refused a Submit click")
    got = stack.client.blpop([f"bench:resumed:{run.run_id}"], timeout=10)
    if got is None:
        raise TimeoutError(f"run {run.run_id} did not resume within 10 s")
    deadline = time.monotonic() + 10
    while stack.client.hget(keys.run(run.run_id), "status") != b"succeeded" and time.monotonic() < deadline:
        time.sleep(0.001)
    return (float(got[1]) - t0) * 1000


def _sample_bare(stack: Stack, poster: Poster, clicks: SubmitClicks, run: Seeded) -> float:
    body = clicks.body(run)
    t0 = time.time()
    if poster.post(body) != 200:
        raise RuntimeError("the bare app refused a Submit click")
    got = stack.client.blpop([f"bench:mark:{run.iid}"], timeout=10)
    if got is None:
        raise TimeoutError("the raw job did not start within 10 s")
    return (float(got[1]) - t0) * 1000


def measure(stack: Stack, cfg: Config) -> Result:
    per_round = cfg.pick(20, 60)
    classes = ("simple", "fork")
    result = Result()
    for worker_class in classes:
        flush(stack.client)
        store = RunStore(stack.client)
        request = three_item_request()
        n = cfg.rounds * per_round + 5
        runs = seed_paused(
            store, n, request, agent=AGENT, user_for=lambda i: f"U0B{i % 100:03d}", messages=stack.seed_messages(n)
        )
        fake = [replace(r, iid=ids.new_question_id()) for r in runs]  # the bare app's clicks
        clicks = SubmitClicks(request)
        procs = stack.parley_workers(1, worker_class) + stack.raw_workers(BARE_QUEUE, 1, worker_class)
        parley, bare = Dist(), Dist()
        try:
            sp, sb = Poster(stack.serve_port), Poster(stack.bare_port)
            it_p, it_b = iter(runs), iter(fake)
            for _ in range(5):  # warm: imports in the worker, first Web API connection
                _sample_parley(stack, sp, clicks, next(it_p))
                _sample_bare(stack, sb, clicks, next(it_b))
            for rnd in range(cfg.rounds):
                sides = [("parley", parley), ("bare", bare)]
                for side, dist in sides if rnd % 2 == 0 else sides[::-1]:
                    sample, it, poster = (_sample_parley, it_p, sp) if side == "parley" else (_sample_bare, it_b, sb)
                    lat = []
                    for _ in range(per_round):
                        lat.append(sample(stack, poster, clicks, next(it)))
                        time.sleep(0.005)
                    dist.add_round(lat)
            sp.close()
            sb.close()
        finally:
            stack.stop(procs)
        result.detail[worker_class] = {"parley": parley.summary(), "bare": bare.summary()}
        extra = parley.p50 - bare.p50
        result.rows += [
            Row(
                "2 resume",
                worker_class,
                "p50 ms",
                parley.p50,
                bare.p50,
                ratio(parley.p50, bare.p50),
                f"<= base+{TARGET_MS:g}ms",
                extra <= TARGET_MS,
                f"{parley.spread()} | {bare.spread()}",
                f"+{extra:.1f} ms",
            ),
            Row("2 resume", worker_class, "p99 ms", parley.p99, bare.p99, ratio(parley.p99, bare.p99)),
        ]
    return result
