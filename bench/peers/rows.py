"""The `--peers` table's rows: latency side by side, and the memory each side holds.

Ratio = Parley / Prefect, as in the bench's other tables (Parley / baseline); the note
says the same the other way round ("Prefect 900x Parley's"). Memory compares like with
like: what N waiting runs add (Parley's Redis `used_memory` growth; Prefect's paused
flows' PSS plus the server's RSS growth) in one row per N, and each side's fixed
processes (servers, workers, a runner) in a row of their own.
"""

from __future__ import annotations

from bench.measurement import Row
from bench.peers.memory import NOTHING, Memory
from bench.stats import Dist, ratio

MB = 1024 * 1024


def latency_row(case: str, metric: str, parley: Dist, peer: Dist) -> Row:
    slower = peer.p50 / parley.p50 if parley.p50 else float("nan")
    return Row(
        "P1 answer -> running",
        case,
        metric,
        parley.p50,
        peer.p50,
        ratio(parley.p50, peer.p50),
        spread=f"{parley.spread()} | {peer.spread()}",
        note=f"Prefect {slower:,.0f}x Parley's; {len(peer.samples)} Prefect samples, max {max(peer.samples):,.0f} ms",
    )


def memory_rows(parley_bytes: dict[int, float], mem: dict[str, Memory], fixed: dict[str, float]) -> list[Row]:
    rows = []
    for n, parley in sorted(parley_bytes.items()):
        if not any(f"server, {n} {kind}" in mem for kind in ("paused", "suspended")):
            rows.append(
                Row(
                    "P3 memory held",
                    f"{n} runs",
                    "MB",
                    parley / MB,
                    note=f"Parley {parley / 1024:,.0f} KB used_memory, 0 processes; Prefect not run at this N",
                )
            )
            continue
        before = mem.get(f"server before {n}", NOTHING).rss_kb
        for kind in ("paused", "suspended"):
            flows = mem.get(f"{n} paused flows", NOTHING) if kind == "paused" else NOTHING
            server = mem.get(f"server, {n} {kind}")
            if server is None:
                continue
            growth = (server.rss_kb - before) / 1024
            peer = flows.pss_mb + growth
            what = "pause" if kind == "paused" else "suspend + serve"
            rows.append(
                Row(
                    "P3 memory held",
                    f"{n} runs, {what}",
                    "MB",
                    parley / MB,
                    peer,
                    ratio(parley / MB, peer),
                    note=f"Parley {parley / 1024:,.0f} KB used_memory, 0 processes; Prefect {flows.processes} "
                    f"processes {flows.pss_mb:,.0f} MB PSS + server RSS growth {growth:,.1f} MB",
                )
            )
    server_mb = mem.get("server at start", NOTHING).rss_mb
    runner = mem.get("runner, 8 suspended", NOTHING)
    rows.append(
        Row(
            "P3 memory held",
            "fixed: servers, workers",
            "MB",
            fixed["total"],
            server_mb,
            ratio(fixed["total"], server_mb),
            note=f"Parley: serve {fixed['serve']:.0f} + 1 worker {fixed['worker']:.0f} MB PSS + Redis "
            f"{fixed['redis']:.1f} MB RSS; Prefect: server {server_mb:.0f} MB RSS (a runner adds "
            f"{runner.pss_mb:.0f} MB PSS)",
        )
    )
    return rows
