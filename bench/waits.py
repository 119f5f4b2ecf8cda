"""Where a worker's wall time goes in full cycles: running, or waiting on Redis or the Web API, and where.

`python -m bench.profile cycle` drives one `parley worker` through full cycles as measurement 4
does with one worker (`bench.cycles`: runs created and enqueued at once, each question clicked
through `parley serve` as soon as it parks), and samples it with py-spy including idle
time (`--idle`). With one worker, runs/s is one over a cycle's wall time on that worker, so this
tells what the time between a run's start and its end is made of: the worker's own work, or its
waits on the replies of Redis and of the Web API stand-in, both processes sharing the machine's
cores with it.

A sample of the worker's main thread (the one in RQ's `work` loop; `in_work_loop`) is a wait when its innermost
frame is one of the socket reads below; it is charged to the nearest frame outside redis-py and
slack_sdk's transport (a Redis wait: the command's caller, `Queue.lmove` for RQ's dequeue) or to
the `WebClient` method (a Web API wait). Every other sample, socket writes included (on
loopback the kernel's TCP work runs in the sender), is the worker running.
"""

from __future__ import annotations

import collections
import re
from pathlib import Path

REDIS_READS = {"read_from_socket", "_read_from_socket"}  # hiredis's parser, redis-py's own
WEBAPI_READS = {"receive", "readinto", "readline", "recv_into", "recv"}  # Parley's transport, urllib's
FRAME = re.compile(r"^(?P<fn>.*?) \((?P<file>[^:()]+)(?::\d+)?\)$")
TRANSPORT = re.compile(r"(^|/)(redis|slack_sdk|http|urllib)/|(^|/)(socket|ssl|transport|retry)\.py$")


def frames(stack: str) -> list[tuple[str, str]]:
    """One py-spy collapsed stack as (function, file) pairs, outermost first, files as site-relative paths."""
    out = []
    for f in stack.split(";"):
        m = FRAME.match(f.strip())
        out.append((m.group("fn"), _short(m.group("file"))) if m else (f.strip(), ""))
    return out


def _short(path: str) -> str:
    return path.rsplit("/site-packages/", 1)[-1].rsplit("/main/", 1)[-1]


def classify(stack_frames: list[tuple[str, str]]) -> tuple[str, str]:
    """(`running` | `waiting for Redis` | `waiting for the Web API`, the site) for one sample's stack."""
    fn, _ = stack_frames[-1]
    leaf = fn.rsplit(".", 1)[-1]
    webapi = next(
        (f for f, file in reversed(stack_frames) if "WebClient." in f and file.startswith("slack_sdk/")), None
    )
    if webapi is not None and leaf in WEBAPI_READS:
        return "waiting for the Web API", webapi
    if leaf in REDIS_READS and any(file.startswith("redis/") for _, file in stack_frames):
        site = next((f"{f} ({file})" for f, file in reversed(stack_frames) if not TRANSPORT.search(file)), "?")
        return "waiting for Redis", site
    return "running", ""


def in_work_loop(stack: str) -> bool:
    """A sample of the worker process's thread in RQ's `work` loop: not its other threads (the lease
    renewer, the metrics server), nor the scheduler RQ forks from inside that loop, whose samples
    carry the worker's frames under a second `process` frame."""
    return "BaseWorker.work" in stack and sum(f.startswith("process ") for f in stack.split(";")) == 1


def summarize_waits(raw: Path, title: str, on_cpu: float | None = None) -> str:
    """The worker's main-thread samples, split into running and waiting, the waits by site.

    `on_cpu`: the CPU time of the worker's process group over the sampling (its other threads and
    RQ's scheduler included, so at most the loop's own) as a share of the wall time. A sample can
    only tell where the thread is, not whether it holds a core: "running" less `on_cpu` is, at
    least, the time it was ready to run and waited for one, the cores being busy elsewhere."""
    kinds: collections.Counter[str] = collections.Counter()
    sites: collections.Counter[tuple[str, str]] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or not in_work_loop(stack):
            continue
        n = int(count)
        total += n
        kind, site = classify(frames(stack))
        kinds[kind] += n
        if site:
            sites[(kind, site)] += n
    if not total:
        return f"{title}\n\nno samples of the worker's main thread\n"
    out = [title, "", f"{total} samples of the worker's main thread, idle included (py-spy --idle)", ""]
    out += [f"  {100 * n / total:5.1f}%  {kind}" for kind, n in kinds.most_common()]
    if on_cpu is not None:
        share = 100 * kinds["running"] / total
        out += [
            f"  of which on a CPU {100 * on_cpu:.1f}% (the worker's CPU time over the sampling / its wall time),",
            f"  and ready but waiting for a core {max(0.0, share - 100 * on_cpu):.1f}%",
        ]
    out += ["", "Waits by site (the command's caller for Redis, the method for the Web API):"]
    out += [f"  {100 * n / total:5.1f}%  {kind}: {site}" for (kind, site), n in sites.most_common(20)]
    return "\n".join(out) + "\n"
