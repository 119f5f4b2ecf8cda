"""`python bench/ack_cpu.py [--bare] [--instructions] [TREE ...]`: CPU per Submit click, in-process.

The ack path's own cost without an HTTP server, a load generator or a second process to
share the cores with: signed Submit clicks on seeded paused runs go straight into the bot's
WSGI app (`bot.wsgi.make_wsgi` over `parley.serve.build_bot`: bolt's verification, parsing
and routing, then Parley's listener, acceptance and RQ enqueue) one after another, and the
process's CPU time is divided by the clicks. CPU time moves far less with the machine's
load than latency does, so it can compare commits the HTTP bench cannot separate.

Each TREE (a checkout of any commit, default this one) is run in its own process with
`PYTHONPATH=TREE`, alternating over rounds, so every side imports its own code. Each needs a
Web API stand-in for bolt's one `auth.test`: this starts `bench.standin` from this checkout.
Redis: `REDIS_URL` on the database `--db` or the URL names, else the embedded Redis's 14; it is flushed.

`--bare` also runs each tree's own bare bolt app (`bench.bare`, the HTTP bench's baseline) on
the same clicks, and prints Parley's cost as a ratio of it: a later tree's question message
is larger, and both sides parse it. `--instructions` counts instructions instead of timing
(valgrind's callgrind, collecting only around the clicks): the same count on every run,
whatever else the machine is doing, so one round separates trees a percent apart. It counts
this process's own work; Redis's and the stand-in's are not in it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slack_sdk.signature import SignatureVerifier

HERE = Path(__file__).resolve().parent.parent
SECRET = "ack-cpu-signing-secret-0123456789"


def _collecting(on: bool) -> None:
    """Start or stop callgrind's count in this process (`--instructions`); nothing outside valgrind."""
    if os.environ.get("ACK_CPU_CALLGRIND"):
        subprocess.run(
            ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], check=True, capture_output=True
        )


def _one_tree(clicks: int, bare: bool) -> dict[str, float]:
    """Runs inside the child (its settings from the environment): seed, warm up, then time `clicks` Submits."""
    import logging

    from bench.agents import AGENT, three_item_request
    from bench.seed import SubmitClicks, seed_paused
    from bot.wsgi import make_wsgi
    from parley import settings as settings_mod
    from parley.serve import build_bot
    from workers.store.runs import RunStore

    logging.disable(logging.CRITICAL)  # equal on every side: no log I/O in the timing
    app, client = build_bot(settings_mod.load())
    wsgi = make_wsgi(app, client)
    if bare:  # the same clicks into the bare app: one Redis SET, one RQ enqueue, then ack()
        from bench.bare import create_bare_app

        baseline = create_bare_app(client, SECRET, os.environ["SLACK_BOT_TOKEN"], os.environ["SLACK_API_URL"])
        wsgi = make_wsgi(baseline, client)
    client.flushdb()
    warm = 50
    n = clicks + warm
    messages = [[f"C0BENCH{i % 64:02d}", f"{1700000000 + i}.000100", f"{1700000000 + i}.000200"] for i in range(n)]
    runs = seed_paused(
        RunStore(client),
        n,
        three_item_request(),
        agent=AGENT,
        user_for=lambda i: f"U0B{i % 100:03d}",
        messages=messages,
    )
    bodies = [SubmitClicks(three_item_request()).body(run) for run in runs]
    statuses: list[str] = []

    def click(body: bytes) -> None:
        # Signed here rather than with `bench.slack_signing`: the child imports the checkout under
        # test, and checkouts older than that module keep the same helper elsewhere.
        ts = str(int(time.time()))
        signature = SignatureVerifier(SECRET).generate_signature(timestamp=ts, body=body)
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/slack/events",
            "QUERY_STRING": "",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "wsgi.url_scheme": "http",
            "CONTENT_TYPE": "application/x-www-form-urlencoded",
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_X_SLACK_REQUEST_TIMESTAMP": ts,
            "HTTP_X_SLACK_SIGNATURE": signature,
            "wsgi.input": io.BytesIO(body),
        }
        b"".join(wsgi(environ, lambda status, headers, exc_info=None: statuses.append(status)))

    for body in bodies[:warm]:
        click(body)
    _collecting(True)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for body in bodies[warm:]:
        click(body)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    _collecting(False)
    refused = [s for s in statuses if not s.startswith("200")]
    if refused:
        raise SystemExit(f"ack_cpu: {len(refused)} clicks were not acked 200 (first: {refused[0]})")
    return {"cpu_ms": 1000 * cpu / clicks, "wall_ms": 1000 * wall / clicks}


def _run_child(tree: str, env: dict[str, str], clicks: int, bare: bool, instructions: bool) -> dict[str, float]:
    """One side's clicks in a process of its own; with `instructions`, under callgrind, adding `ir` per click."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", "--clicks", str(clicks)]
    argv += ["--bare"] if bare else []
    with tempfile.TemporaryDirectory() as tmp:
        out_file = Path(tmp) / "callgrind.out"
        if instructions:
            argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_file}", *argv]
            env = {**env, "ACK_CPU_CALLGRIND": "1"}
        out = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"ack_cpu: {tree} failed:\n{out.stderr[-2000:]}{out.stdout[-500:]}")
        result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
        if instructions:
            totals = [line for line in out_file.read_text().splitlines() if line.startswith("totals:")]
            result["ir"] = int(totals[0].split()[1]) / clicks
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="*", default=[str(HERE)], help="checkouts to compare (default: this one)")
    p.add_argument("--clicks", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--db", type=int, default=None)
    p.add_argument("--bare", action="store_true", help="also run each tree's bare bolt app, and print the ratio")
    p.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(_one_tree(args.clicks, args.bare)))
        return 0
    if args.instructions and not shutil.which("valgrind"):
        raise SystemExit("ack_cpu: --instructions needs valgrind (Debian's valgrind package)")

    sys.path.insert(0, str(HERE))
    from bench.processes import free_port
    from bench.redis_db import bench_redis_url

    redis_url = bench_redis_url(db=args.db)  # refuses database 0

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    standin = subprocess.Popen([sys.executable, "-m", "bench.standin", str(port)], env=env, cwd=HERE)
    sides = [(tree, bare) for tree in args.trees for bare in ((False, True) if args.bare else (False,))]
    try:
        time.sleep(2.0)
        results: dict[tuple[str, bool], list[dict[str, float]]] = {side: [] for side in sides}
        for _ in range(args.rounds):
            for tree, bare in sides:
                child_env = {
                    **os.environ,
                    "PYTHONPATH": str(Path(tree).resolve()),
                    "REDIS_URL": redis_url,
                    "SLACK_BOT_TOKEN": "xoxb-bench-0000",
                    "SLACK_SIGNING_SECRET": SECRET,
                    "SLACK_API_URL": f"http://127.0.0.1:{port}/api/",
                    "PARLEY_AGENTS": "bench.agents",
                }
                results[(tree, bare)].append(_run_child(tree, child_env, args.clicks, bare, args.instructions))
    finally:
        standin.terminate()
        standin.wait(10)
    unit = "instructions" if args.instructions else "CPU"
    print(f"{unit} per Submit click, in-process ({args.clicks} clicks x {args.rounds} alternating rounds)")
    for tree in args.trees:
        for bare in (False, True) if args.bare else (False,):
            print(f"  {tree}{' (bare bolt app)' if bare else ''}: {_summary(results[(tree, bare)], args.instructions)}")
        if args.bare:
            key = "ir" if args.instructions else "cpu_ms"
            ours = statistics.median(r[key] for r in results[(tree, False)])
            theirs = statistics.median(r[key] for r in results[(tree, True)])
            print(f"  {tree}: Parley / bare = {ours / theirs:.3f}")
    return 0


def _summary(rounds: list[dict[str, float]], instructions: bool) -> str:
    if instructions:
        ir = sorted(r["ir"] for r in rounds)
        return f"{statistics.median(ir) / 1e6:.4f} M instructions (rounds {' '.join(f'{x / 1e6:.4f}' for x in ir)})"
    cpu = sorted(r["cpu_ms"] for r in rounds)
    wall = sorted(r["wall_ms"] for r in rounds)
    return (
        f"CPU median {statistics.median(cpu):.3f} ms (rounds {' '.join(f'{c:.3f}' for c in cpu)}),"
        f" wall median {statistics.median(wall):.3f} ms"
    )


if __name__ == "__main__":
    raise SystemExit(main())
