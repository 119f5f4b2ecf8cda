"""3. Question latency: `run.ask` → the question arriving at the Web API stand-in.

Parley: a `bench-cycle` run is started (created and enqueued, with no thread root yet) on
an idle `parley worker`; on its first execution the agent records the time just
before `run.ask`, and the question's `chat.postMessage` is found in the stand-in's
call log by its thread. That span holds recording the interrupt, building and
checking the blocks, and the Web API call. Baseline: a raw RQ job on the same
worker class records the time and posts the same, prebuilt, blocks with the same
`WebClient`. Both arrival times come from the stand-in's log, which stamps a call
once it has checked the blocks, so both include the stand-in's own handling.
"""

from __future__ import annotations

import secrets
import time

from rq import Queue
from rq.serializers import JSONSerializer

from bench.agents import AGENT, three_item_request
from bench.measurement import Config, Result, Row
from bench.redis_db import flush
from bench.stack import Stack
from bench.stats import Dist, ratio
from bot.playground.workspace import TEAM_ID
from bot.slack import blocks
from workers.runtime.queues import enqueue_run, queue
from workers.store import ids, keys
from workers.store.runs import RunStore

RAW_QUEUE = "bench-raw"


def _wait(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("question measurement: timed out")
        time.sleep(0.001)


def measure(stack: Stack, cfg: Config) -> Result:
    per_round = cfg.pick(10, 40)
    flush(stack.client)
    r = stack.client
    store = RunStore(r)
    pq = queue(r)
    raw = Queue(RAW_QUEUE, connection=r, serializer=JSONSerializer)
    request = three_item_request()
    n = cfg.rounds * per_round + 3
    threads = stack.seed_messages(2 * n)
    procs = stack.parley_workers(1, "simple") + stack.raw_workers(RAW_QUEUE, 1, "simple")
    since = time.time() - 1
    parley_runs: list[list[tuple[str, str]]] = []  # per round: (run id, thread ts)
    raw_posts: list[list[str]] = []  # per round: thread ts
    try:
        it = iter(threads)

        def ask_once() -> tuple[str, str]:
            channel, root, _ = next(it)
            user = f"U0B{secrets.randbelow(100):03d}"
            run = store.create(
                AGENT, "", user, {"host": "slack", "team": TEAM_ID, "channel": channel, "thread_ts": root}
            )
            r.set(keys.thread(channel, root), run.id)
            enqueue_run(pq, run.id, run.job)
            _wait(lambda: r.hget(keys.run(run.id), "status") == b"paused")
            return run.id, root

        def post_once() -> str:
            channel, root, _ = next(it)
            iid = ids.new_question_id()
            question = blocks.question_blocks(request, iid, assignees=["U0B001"])
            job = raw.enqueue("bench.jobs.post_question", channel, root, blocks.fallback_text(request), question)
            _wait(lambda: job.get_status(refresh=True) == "finished")
            return root

        for _ in range(3):  # warm both workers
            ask_once()
            post_once()
        for rnd in range(cfg.rounds):
            order = (0, 1) if rnd % 2 == 0 else (1, 0)
            for side in order:
                if side == 0:
                    parley_runs.append([ask_once() for _ in range(per_round)])
                else:
                    raw_posts.append([post_once() for _ in range(per_round)])
                time.sleep(0.05)
    finally:
        stack.stop(procs)
    arrived = {c["thread_ts"]: c["at"] for c in stack.calls("chat.postMessage", since) if not c["error"]}
    parley, bare = Dist(), Dist()
    for batch in parley_runs:
        parley.add_round((arrived[ts] - float(r.get(f"bench:asked:{run_id}") or 0)) * 1000 for run_id, ts in batch)
    for posts in raw_posts:
        bare.add_round((arrived[ts] - float(r.get(f"bench:posted:{ts}") or 0)) * 1000 for ts in posts)
    return Result(
        rows=[
            Row(
                "3 question",
                "simple",
                "p50 ms",
                parley.p50,
                bare.p50,
                ratio(parley.p50, bare.p50),
                spread=f"{parley.spread()} | {bare.spread()}",
            ),
            Row("3 question", "simple", "p99 ms", parley.p99, bare.p99, ratio(parley.p99, bare.p99)),
        ],
        detail={"parley": parley.summary(), "bare_post": bare.summary()},
    )
