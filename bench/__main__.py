"""`python -m bench [--quick] [--only 1,4] [--peers]`: Parley's cost against bolt, Redis and RQ, side by side.

Starts the Web API stand-in, `parley serve` and a bare bolt app on free ports,
runs the selected measurements (each starts and stops the workers it needs), then
prints the table and writes `latest.{json,md,png}` (and a copy named after the mode,
`quick.*` or `full.*`) into `--out`, `bench/results/` by default, and nowhere else. A
measurement whose programs are not installed is skipped with one line saying how to
install them. Redis: the embedded one, in a folder of its own, database 14; or the server
`--redis-url` or `REDIS_URL` names, on the database `--db` or the URL names (it is flushed, so
the bench never picks one itself, and refuses database 0). `--peers` runs only
`bench.m_peers` instead: Parley beside Prefect's pause and suspend (the `peers` extra).
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import subprocess
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import rq
import slack_bolt

from bench import report
from bench.measurement import Config, MissingTool, Row, missing_tools
from bench.processes import ROOT
from bench.redis_db import bench_redis_url, connect, flush
from bench.stack import Stack

MEASUREMENTS = {
    1: "bench.m_ack",
    2: "bench.m_resume",
    3: "bench.m_question",
    4: "bench.m_cycle",
    5: "bench.m_footprint",
    6: "bench.m_inbox",
    7: "bench.m_workers",
    8: "bench.m_retention",
    9: "bench.m_group",
    10: "bench.m_replicas",
    11: "bench.m_scaleout",
    12: "bench.m_api",
    13: "bench.m_temporal",
    14: "bench.m_clients",
    15: "bench.m_redis_cost",
}
RESULTS = ROOT / "bench" / "results"


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller samples: under 3 minutes on 2 cores")
    p.add_argument("--only", default="", help="comma-separated measurement numbers (1-15); default all")
    p.add_argument("--rounds", type=int, default=None, help="alternating rounds per comparison (3 quick, 5 full)")
    p.add_argument("--redis-url", default=None, help="Redis server (default REDIS_URL, else the embedded Redis)")
    p.add_argument(
        "--db", type=int, default=None, help="the Redis database the bench owns and flushes (14 on the embedded Redis)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=RESULTS,
        help="the only directory written: latest.{json,md,png} (and quick.* or full.* without --only)",
    )
    p.add_argument(
        "--parley-tree",
        type=Path,
        default=None,
        help="run parley serve and parley worker from this checkout, against this checkout's baselines",
    )
    p.add_argument(
        "--slack-tls",
        action="store_true",
        help="every process reaches the Web API stand-in over HTTPS, as it reaches Slack",
    )
    p.add_argument(
        "--without-agents",
        action="store_true",
        help="the stand-in's workspace lacks Slack's agent surfaces, as an app not declared an agent",
    )
    p.add_argument(
        "--peers",
        action="store_true",
        help="Parley beside Prefect's pause and suspend (needs pip install -e '.[peers]'); writes peers.{json,md}",
    )
    p.add_argument(
        "--peers-n",
        type=int,
        default=100,
        help="with --peers: the larger N of paused flows (as many as start in 8 min)",
    )
    return p.parse_args(argv)


def _commit() -> str:
    """HEAD, marked "+local changes" when tracked files outside bench/ differ from it (those were measured)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except OSError:
        return "?"
    return (head or "?") + (" +local changes" if dirty else "")


def run_one(n: int, name: str, stack: Stack, cfg: Config) -> tuple[list[Row], dict[str, Any]]:
    """Measurement `n` (module `name`): its rows and detail, a "skipped" row without a program it
    needs (one line on stderr says how to install it), or an "error" row when it fails."""
    module = importlib.import_module(name)
    measure = f"{n} {name.split('_', 1)[1]}"
    missing = missing_tools(getattr(module, "TOOLS", {}))
    try:
        if missing:
            raise MissingTool("; ".join(missing))
        res = module.measure(stack, cfg)
    except MissingTool as exc:  # not a failure of Parley's: the measurement cannot run here
        print(f"measurement {n} skipped: {exc}", file=sys.stderr, flush=True)
        return [Row(measure, "skipped", "", float("nan"), note=str(exc)[:200])], {"skipped": str(exc)}
    except Exception as exc:  # one failed measurement must not hide the others' figures
        traceback.print_exc()
        stack.keep_logs = True
        return [Row(measure, "error", "", float("nan"), note=f"{exc}"[:200])], {"error": traceback.format_exc()}
    return res.rows, res.detail


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.peers:
        from bench import m_peers

        return m_peers.run(bench_redis_url(args.redis_url, args.db), args.rounds or 2, args.peers_n, args.out)
    cfg = Config(quick=args.quick, rounds=args.rounds or (3 if args.quick else 5))
    selected = [int(x) for x in args.only.split(",") if x.strip()] or list(MEASUREMENTS)
    url = bench_redis_url(args.redis_url, args.db)
    client = connect(url)
    flush(client)
    started = time.perf_counter()
    rows: list[Row] = []
    details: dict[str, Any] = {}
    durations: dict[str, float] = {}
    with Stack(url, client, args.parley_tree, slack_tls=args.slack_tls, without_agents=args.without_agents) as stack:
        stack.start_servers()
        for n in selected:
            name = MEASUREMENTS[n]
            t0 = time.perf_counter()
            print(f"[{time.perf_counter() - started:6.1f}s] measurement {n}: {name}", file=sys.stderr, flush=True)
            got, details[str(n)] = run_one(n, name, stack, cfg)
            rows += got
            durations[str(n)] = round(time.perf_counter() - t0, 1)
    flush(client)
    seconds = time.perf_counter() - started
    mode = "quick" if args.quick else "full"
    meta = {
        "mode": mode,
        "command": "python -m bench"
        + (" --quick" if args.quick else "")
        + (f" --only {args.only}" if args.only else "")
        + (" --slack-tls" if args.slack_tls else "")
        + (" --without-agents" if args.without_agents else ""),
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "redis": client.info("server")["redis_version"],
        "rq": rq.__version__,
        "bolt": slack_bolt.version.__version__,
        "commit": _commit() + (f" (Parley from {args.parley_tree})" if args.parley_tree else ""),
        "seconds": seconds,
        "rounds": cfg.rounds,
        "durations": durations,
        "load_average": os.getloadavg(),
    }
    table = report.text_table(rows)
    print(table)
    print(f"\n{mode} run: {seconds:.0f} s; load average {meta['load_average'][0]:.1f} on {meta['cpus']} CPUs")
    written = report.write_results(args.out, rows, details, meta, copy_as=None if args.only else mode)
    print(f"written: {', '.join(str(p) for p in written)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
