"""`python -m bench.ablate`: price the parts of Parley's ack path by switching them off one at a time.

Runs `parley serve`, two variants of it (`bench.variant`: no lock update; no lazy
listener at all) and the bare bolt app side by side, with the ack-path load of
measurement 1 at concurrency 1 and 16, in alternating rounds. What is left between
`no-lazy` and `bare` is the ack listener itself: decode, two reads of the
interrupt and one of the run, validation, the atomic close, the unique enqueue and
the log line. Writes `bench/results/ablate.md`.
"""

from __future__ import annotations

import itertools
import time

from bench.agents import AGENT, three_item_request
from bench.common import Dist, bench_redis_url, connect, flush, free_port, http_ok, python_argv, wait_until
from bench.m_ack import load
from bench.seed import SubmitClicks, seed_paused
from bench.stack import Stack
from workers.store.runs import RunStore

RESULTS_MD = "ablate.md"
SIDES = ("parley", "no-lock", "no-lazy", "bare")


def main() -> int:
    from bench.profile import RESULTS

    rounds, counts = 3, {1: 150, 16: 480}
    url = bench_redis_url()
    client = connect(url)
    flush(client)
    with Stack(url, client) as stack:
        stack.start_servers()
        ports = {"parley": stack.serve_port, "bare": stack.bare_port}
        for variant in ("no-lock", "no-lazy"):
            port = free_port()
            proc = stack.start_process(f"variant-{variant}", python_argv("-m", "bench.variant", str(port), variant))
            wait_until(lambda port=port: http_ok(f"http://127.0.0.1:{port}/healthz"), 30, variant, proc)
            ports[variant] = port
        request = three_item_request()
        total = len(SIDES) * (rounds * sum(counts.values()) + 64)
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
        for side in SIDES:
            load(ports[side], list(itertools.islice(bodies, 64)), 8)  # warm
        dists = {(s, c): Dist() for s in SIDES for c in counts}
        for rnd in range(rounds):
            for c, n in counts.items():
                for side in SIDES[rnd % len(SIDES) :] + SIDES[: rnd % len(SIDES)]:
                    lat, _, _ = load(ports[side], list(itertools.islice(bodies, n)), c)
                    dists[(side, c)].add_round(lat)
                    time.sleep(0.3)
    flush(client)
    lines = [
        "# Ack path ablation",
        "",
        "`python -m bench.ablate`: p50 / p99 in ms, pooled over "
        f"{rounds} alternating rounds; ratio to the bare bolt app.",
        "",
        "| Server | c=1 p50 | c=1 p99 | c=16 p50 | c=16 p99 | c=1 p99 / bare | c=16 p99 / bare |",
        "|---|---|---|---|---|---|---|",
    ]
    for side in SIDES:
        a, b = dists[(side, 1)], dists[(side, 16)]
        lines.append(
            f"| {side} | {a.p50:.2f} | {a.p99:.2f} | {b.p50:.2f} | {b.p99:.2f} | "
            f"{a.p99 / dists[('bare', 1)].p99:.2f}x | {b.p99 / dists[('bare', 16)].p99:.2f}x |"
        )
    text = "\n".join(lines) + "\n"
    (RESULTS / RESULTS_MD).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
