"""`python -m bench.loop_lag OUT [--parley-tree TREE]`: the ack's tail beside the event loop's lag.

`parley serve` takes measurement 1's closed loop (16 clients clicking Submit on seeded paused
runs) in alternating rounds with measurement 12's 200 long-polls open and without them, while
one more client sends `GET /api/v1` every 5 ms: that request is answered on the event loop
with no thread, so its time is the loop's lag. py-spy (if installed) records the server during
each round (`OUT/spy-<side>-<round>.txt`, collapsed stacks per thread); `OUT/report.json`
holds each round's ack p50/p99, the loop lag's p50/p99 and when the slowest of both came.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import secrets
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from bench.agents import AGENT, three_item_request
from bench.m_api import OPEN_POLLS, Api, OpenPolls
from bench.redis_db import bench_redis_url, connect, flush
from bench.seed import SubmitClicks, seed_paused
from bench.stack import Poster, Stack
from bench.stats import pct
from workers.questions import tokens
from workers.store.questions import QuestionStore
from workers.store.runs import RunStore

ROUNDS, PER_ROUND, CLIENTS = 3, 224, 16


def timed_load(port: int, bodies: list[bytes], c: int) -> list[tuple[float, float]]:
    """Measurement 1's closed loop; (start, latency ms) of every click."""
    out: list[tuple[float, float]] = []
    lock, counter, start = threading.Lock(), itertools.count(), threading.Barrier(c + 1)

    def client() -> None:
        poster, mine = Poster(port), []
        start.wait()
        while (i := next(counter)) < len(bodies):
            t0 = time.perf_counter()
            poster.post(bodies[i])
            mine.append((t0, (time.perf_counter() - t0) * 1000))
        poster.close()
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(c)]
    for t in threads:
        t.start()
    start.wait()
    for t in threads:
        t.join()
    return out


class LoopLag:
    """`GET /api/v1` every 5 ms on one keep-alive connection: (start, latency ms) of each."""

    def __init__(self, port: int) -> None:
        self.port, self.stop, self.samples = port, threading.Event(), list[tuple[float, float]]()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        while not self.stop.is_set():
            t0 = time.perf_counter()
            conn.request("GET", "/api/v1")
            conn.getresponse().read()
            self.samples.append((t0, (time.perf_counter() - t0) * 1000))
            time.sleep(0.005)

    def __enter__(self) -> LoopLag:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def summary(acks: list[tuple[float, float]], lag: list[tuple[float, float]], t0: float) -> dict[str, Any]:
    a, g = sorted(x[1] for x in acks), sorted(x[1] for x in lag)

    def slowest(xs: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return [(round(s - t0, 3), round(ms, 1)) for s, ms in sorted(xs, key=lambda x: -x[1])[:8]]

    return {
        "ack_p50": pct(a, 50),
        "ack_p99": pct(a, 99),
        "lag_p50": pct(g, 50) if g else None,
        "lag_p99": pct(g, 99) if g else None,
        "lag_samples": len(g),
        "slowest_acks_at": slowest(acks),
        "slowest_lag_at": slowest(lag),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--parley-tree", type=Path, default=None)
    parser.add_argument("--db", type=int, default=None)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    url = bench_redis_url(None, args.db)
    client = connect(url)
    flush(client)
    report: dict[str, Any] = {}
    pyspy = shutil.which("py-spy")
    with Stack(url, client, args.parley_tree) as stack:
        stack.start_servers()
        token = tokens.create(
            QuestionStore(client), f"bench-{secrets.token_hex(3)}", ["ask"], rate_limit=10**9, open_questions=10**9
        )
        api = Api(stack.serve_port, token.token)
        waiting = [api.ask()["id"] for _ in range(OPEN_POLLS)]
        request, total = three_item_request(), ROUNDS * 2 * PER_ROUND + 64
        runs = seed_paused(
            RunStore(client),
            total,
            request,
            agent=AGENT,
            user_for=lambda i: f"U0B{i % 100:03d}",
            messages=stack.seed_messages(total),
        )
        clicks = SubmitClicks(request)
        bodies = iter([clicks.body(r) for r in runs])
        timed_load(stack.serve_port, [next(bodies) for _ in range(64)], 8)  # warm
        for rnd in range(ROUNDS):
            for side in ("open", "none") if rnd % 2 == 0 else ("none", "open"):
                polls = OpenPolls(api, waiting, stack.serve_pgid).__enter__() if side == "open" else None
                spy = None
                with LoopLag(stack.serve_port) as lag:
                    if pyspy and stack.serve_pgid is not None:
                        argv = [pyspy, "record", "-p", str(stack.serve_pgid), "-r", "200", "--threads"]
                        argv += ["--format", "raw", "--nonblocking", "-o", str(args.out / f"spy-{side}-{rnd}.txt")]
                        spy = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        time.sleep(0.5)
                    t0 = time.perf_counter()
                    acks = timed_load(stack.serve_port, [next(bodies) for _ in range(PER_ROUND)], CLIENTS)
                    t1 = time.perf_counter()
                    if spy is not None:
                        spy.send_signal(signal.SIGINT)
                        spy.wait(10)
                if polls is not None:
                    polls.__exit__(None)
                during = [x for x in lag.samples if t0 <= x[0] <= t1]
                report[f"{side}-{rnd}"] = summary(acks, during, t0)
                print(side, rnd, json.dumps(report[f"{side}-{rnd}"]), flush=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
