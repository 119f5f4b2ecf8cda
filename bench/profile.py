"""`python -m bench.profile [ack|worker|cycle|ask]`: where the time goes in a missed target, sampled with py-spy.

- `ack`: `parley serve` (uvicorn and every thread) while 16 clients
  click Submit on seeded paused runs: the ack path and its lazy message update.
- `worker`: one `parley worker` (SimpleWorker) while it resumes a batch of answered
  runs (replay, say, final answer), as in the worker-class and full-cycle figures.
- `cycle`: one `parley worker` running full cycles as measurement 4 does with one worker,
  its wall time split into running and waiting on Redis or the Web API (`bench.waits`).
- `ask`: `parley serve` while one client asks API questions one after another, as
  measurement 12's ask → posted does: the create, the run executed inline, the post, the park.

py-spy samples the real processes from outside; the summary written to
`bench/results/profile-<name>.txt` lists the share of samples (non-idle threads)
per library and the functions with the largest inclusive and self shares (for `cycle`,
first the worker's waits, idle samples included).
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.agents import AGENT, three_item_request
from bench.cycles import Cycles
from bench.m_ack import load
from bench.m_workers import _parley_rate
from bench.processes import group_cpu_seconds
from bench.redis_db import bench_redis_url, connect, flush
from bench.seed import SubmitClicks, seed_paused
from bench.stack import Stack
from bench.waits import frames, summarize_waits
from workers.runtime.wiring import Runtime
from workers.store.runs import RunStore

RESULTS = Path(__file__).resolve().parent / "results"
CATEGORIES = [  # first match on the frame's file path (as py-spy shortens it) wins
    ("redis-py (commands, socket I/O, parsing)", r"(^|/)redis/"),
    ("RQ", r"(^|/)rq/"),
    ("pydantic", r"(^|/)pydantic(_core)?/"),
    ("slack_sdk block models", r"(^|/)slack_sdk/models/"),
    ("slack_sdk Web API client", r"(^|/)slack_sdk/"),
    ("bolt", r"(^|/)slack_bolt/"),
    ("uvicorn and a2wsgi", r"(^|/)(uvicorn|a2wsgi)/"),
    ("bot/wsgi.py (the WSGI wrapper under every request)", r"(^|/)wsgi\.py$"),
    (
        "Parley (bot, workers, parley)",
        r"(^|/)(bot|workers|parley|listeners|slack|store|runtime)/|"
        r"^(actions|answers|host|runs|context|execute|acceptance)\.py$",
    ),
    ("bench agent", r"(^|/)bench/"),
    ("logging", r"(^|/)logging/"),
    ("json", r"(^|/)json/"),
    ("urllib.parse (form-body decoding)", r"(^|/)urllib/parse\.py$"),
    ("http.client / urllib / socket", r"(^|/)(http/|urllib/|socket\.py|ssl\.py|selectors\.py)"),
    ("threading / queue", r"(^|/)(threading\.py|queue\.py|concurrent/)"),
]


def _category(path: str) -> str:
    for name, pattern in CATEGORIES:
        if re.search(pattern, path):
            return name
    return "other (stdlib, interpreter)"


def summarize(raw: Path, title: str) -> str:
    """A readable summary of py-spy's collapsed stacks: per-library leaf shares, then top functions."""
    inclusive: collections.Counter[str] = collections.Counter()
    self_time: collections.Counter[str] = collections.Counter()
    leaf_cat: collections.Counter[str] = collections.Counter()
    incl_cat: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        stack_frames = frames(stack)
        for name in {f"{fn} ({file})" for fn, file in stack_frames}:
            inclusive[name] += n
        fn, file = stack_frames[-1]
        self_time[f"{fn} ({file})"] += n
        leaf_cat[_category(file)] += n
        for cat in {_category(file) for _, file in stack_frames}:
            incl_cat[cat] += n
    if not total:
        return f"{title}\n\nno samples\n"
    out = [
        title,
        "",
        f"{total} samples of non-idle threads",
        "",
        "Share of samples by library of the innermost frame (self) and anywhere on the stack (inclusive):",
    ]
    for cat, n in leaf_cat.most_common():
        out.append(f"  {100 * n / total:5.1f}% self  {100 * incl_cat[cat] / total:5.1f}% incl  {cat}")
    out += ["", "Top functions by inclusive share:"]
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(45)]
    out += ["", "Top functions by self share:"]
    out += [f"  {100 * n / total:5.1f}%  {name}" for name, n in self_time.most_common(25)]
    return "\n".join(out) + "\n"


def _pyspy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed: pip install py-spy")
    return found


class Spy:
    """Two py-spy samplers on one process tree: every non-idle thread (wall), and only the GIL holder (CPU)."""

    def __init__(self, pid: int, seconds: float, name: str, *, idle: bool = False) -> None:
        """`idle`: the wall sampler counts idle threads too (a thread blocked on a socket), to see waits."""
        self.paths = {mode: RESULTS / f"profile-{name}.{mode}.raw.tmp" for mode in ("wall", "gil")}
        self.procs = [
            subprocess.Popen(
                [
                    _pyspy(),
                    "record",
                    "--pid",
                    str(pid),
                    "--subprocesses",
                    "--threads",
                    "--rate",
                    "200",
                    "--duration",
                    str(int(seconds)),
                    "--format",
                    "raw",
                    "--output",
                    str(path),
                    "--nonblocking",
                    *(["--gil"] if mode == "gil" else ["--idle"] if idle else []),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for mode, path in self.paths.items()
        ]

    def wait(self, timeout: float) -> dict[str, Path]:
        for p in self.procs:
            p.wait(timeout)
        return self.paths


def profile_ack(stack: Stack, seconds: int) -> dict[str, Path]:
    flush(stack.client)
    request = three_item_request()
    n = 300 * seconds
    runs = seed_paused(
        RunStore(stack.client),
        n,
        request,
        agent=AGENT,
        user_for=lambda i: f"U0B{i % 100:03d}",
        messages=stack.seed_messages(n),
    )
    clicks = SubmitClicks(request)
    bodies = [clicks.body(r) for r in runs]
    load(stack.serve_port, bodies[:64], 8)  # warm
    serve = next(p for p in stack.procs if p.name.endswith("parley-serve"))
    spy = Spy(serve.pid, seconds, "ack")
    time.sleep(1.0)
    deadline = time.monotonic() + seconds - 1.5
    i = 64
    while time.monotonic() < deadline and i < len(bodies):
        load(stack.serve_port, bodies[i : i + 320], 16)
        i += 320
    return spy.wait(seconds + 30)


def profile_worker(stack: Stack, seconds: int) -> dict[str, Path]:
    flush(stack.client)
    rt = Runtime.build(stack.client)
    n = 60 * seconds
    runs = seed_paused(
        rt.store,
        n,
        three_item_request(),
        agent=AGENT,
        text="say",
        user_for=lambda i: f"U0B{i % 100:03d}",
        messages=stack.seed_messages(n),
    )
    procs = stack.parley_workers(1, "simple")
    try:
        _parley_rate(rt, runs[:20])  # warm
        spy = Spy(procs[0].pid, seconds, "worker")
        time.sleep(1.0)
        _parley_rate(rt, runs[20:])
        return spy.wait(seconds + 30)
    finally:
        stack.stop(procs)


def profile_cycle(stack: Stack, seconds: int) -> dict[str, Path]:
    flush(stack.client)
    procs = stack.parley_workers(1, "simple")
    try:
        cycles = Cycles(stack.redis_url, stack.serve_port)
        cycles.batch(20)  # warm: imports, connections, scripts, question templates
        # One batch (about 100 cycles/s on one worker) running from before the sampling starts
        # to after it ends, so that no sample falls outside it: in its tail the worker only waits
        # for the last answers.
        batch = threading.Thread(target=cycles.batch, args=(100 * (seconds + 4),), daemon=True)
        batch.start()
        time.sleep(1.0)
        pid = procs[0].pid
        cpu0, t0 = group_cpu_seconds(pid), time.monotonic()
        spy = Spy(pid, seconds, "cycle", idle=True)
        paths = spy.wait(seconds + 30)
        cpu = RESULTS / "profile-cycle.cpu.tmp"  # the worker's CPU time over the sampling, for its on-CPU share
        cpu.write_text(f"{group_cpu_seconds(pid) - cpu0} {time.monotonic() - t0}\n")
        batch.join(300)
        return {**paths, "cpu": cpu}
    finally:
        stack.stop(procs)


def profile_ask(stack: Stack, seconds: int) -> dict[str, Path]:
    from bench.m_api import Api
    from workers.questions import tokens
    from workers.store.questions import QuestionStore

    flush(stack.client)
    token = tokens.create(QuestionStore(stack.client), "bench-profile", ["ask"], rate_limit=10**9, open_questions=10**9)
    api = Api(stack.serve_port, token.token)
    try:
        for _ in range(50):  # warm: imports, connections, scripts
            api.ask()
        serve = next(p for p in stack.procs if p.name.endswith("parley-serve"))
        spy = Spy(serve.pid, seconds, "ask")
        time.sleep(1.0)
        deadline = time.monotonic() + seconds - 1.5
        while time.monotonic() < deadline:
            api.ask()
        return spy.wait(seconds + 30)
    finally:
        api.http.close()


PROFILES = {"ack": profile_ack, "worker": profile_worker, "cycle": profile_cycle, "ask": profile_ask}


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile")
    p.add_argument("what", nargs="*", help="ack, worker, cycle (default ack and worker)")
    p.add_argument("--seconds", type=int, default=12)
    p.add_argument("--from-raw", action="store_true", help="summarize the last recording again, without sampling")
    args = p.parse_args()
    if unknown := [w for w in args.what if w not in PROFILES]:
        p.error(f"unknown profile {', '.join(unknown)}: choose from {', '.join(PROFILES)}")
    if args.from_raw:
        for what in args.what or ["ack", "worker"]:
            raws = {mode: RESULTS / f"profile-{what}.{mode}.raw.tmp" for mode in ("wall", "gil")}
            _write(what, {**raws, "cpu": RESULTS / f"profile-{what}.cpu.tmp"})
        return 0
    url = bench_redis_url()
    client = connect(url)
    with Stack(url, client) as stack:
        stack.start_servers()
        for what in args.what or ["ack", "worker"]:
            _write(what, PROFILES[what](stack, args.seconds))
    flush(client)
    return 0


def _write(what: str, raws: dict[str, Path]) -> None:
    title = {
        "ack": "parley serve under 16 concurrent Submit clicks",
        "worker": "parley worker (SimpleWorker) resuming answered runs: replay, say, final answer",
        "cycle": "parley worker (SimpleWorker) running full cycles, one worker, as measurement 4",
        "ask": "parley serve answering API asks one after another, as measurement 12's ask → posted",
    }[what]
    parts = []
    if what == "cycle":  # its wall sampler counted idle threads: the waits first
        cpu, wall_s = (float(x) for x in raws["cpu"].read_text().split())
        parts.append(summarize_waits(raws["wall"], "== Wall: running or waiting", on_cpu=cpu / wall_s))
        wall = "== Wall: samples of every thread, idle ones included (py-spy --idle)"
    else:
        wall = "== Wall: samples of every non-idle thread (py-spy)"
    parts.append(summarize(raws["gil"], "== CPU: samples of the thread holding the GIL (py-spy --gil)"))
    parts.append(summarize(raws["wall"], wall))
    text = f"{title}\n" + "\n\n".join(p.rstrip("\n") for p in parts) + "\n"
    (RESULTS / f"profile-{what}.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    raise SystemExit(main())
