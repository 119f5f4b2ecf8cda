"""`python bench/standin_cpu.py [--calls N] [--rounds R]`: what each of a cycle's Web API calls costs the stand-in.

With one worker, measurement 4's ratio is set by the worker's wall time, and `bench.profile
cycle` finds about a third of it waiting for the Web API stand-in's replies. This says which
of the cycle's four calls those waits are, and why: each call is sent as a cycle sends it (the
payloads built by the Slack host's own block builders, through Parley's `KeepAliveWebClient`)
to a `bench.standin` of its own, and reported as the stand-in's CPU per call (its process
group, read from /proc) and the caller's wall time per call. Beside them, the stand-in's Block
Kit check of the question's and the lock's blocks (`bot.playground.webapi.validate_blocks`,
what it runs on every call with blocks) is timed in this process, so the check's share of the
call can be told from the HTTP and bookkeeping around it.

The four calls, in a cycle's order: the thread root (text), the question (blocks, metadata, in
the thread), the lock (`chat.update` with the answer's blocks), the final answer (text, in the
thread). Every reply must be `ok` (slack_sdk raises otherwise), so a payload the stand-in
refuses stops the run instead of being timed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
CHANNEL = "C0BENCH01"
IID = "qStandinCpu0123456789ab"


def _calls(web: Any, root_ts: str) -> tuple[dict[str, Callable[[], Any]], dict[str, list[dict[str, Any]]]]:
    """The cycle's four Web API calls, by name, each as `SlackHost` makes it; and the question's and
    the lock's blocks they send."""
    from bench.agents import three_item_request
    from bot.slack import blocks
    from bot.slack.mrkdwn import user_ref
    from bot.slack.question_metadata import question_metadata
    from workers.interaction.models import Answer

    request = three_item_request()
    question = blocks.question_blocks(request, IID, assignees=["U0B000"])
    answers = [
        Answer(id="env", choice="production"),
        Answer(id="regions", choices=["eu-west-1"]),
        Answer(id="why", free_text="Hotfix for the login outage"),
    ]
    lock = blocks.answered_blocks(request, answers, answered_by="U0B000", answered_at=time.time())
    thread = {"channel": CHANNEL, "thread_ts": root_ts, "unfurl_links": False, "unfurl_media": False}
    asked = web.chat_postMessage(**thread, text=blocks.fallback_text(request), blocks=question)["ts"]
    calls = {
        "chat.postMessage: thread root": lambda: web.chat_postMessage(
            channel=CHANNEL,
            text=blocks.run_started_text("U0B000", "bench-cycle", ""),
            unfurl_links=False,
            unfurl_media=False,
        ),
        "chat.postMessage: question": lambda: web.chat_postMessage(
            **thread, text=blocks.fallback_text(request), blocks=question, metadata=question_metadata(IID)
        ),
        "chat.update: lock": lambda: web.chat_update(
            channel=CHANNEL,
            ts=asked,
            text=blocks.locked_text(request, f"Answered by {user_ref('U0B000')}"),
            blocks=lock,
        ),
        "chat.postMessage: final answer": lambda: web.chat_postMessage(
            **thread, text=blocks.final_text("deployed to production in eu-west-1")
        ),
    }
    return calls, {"question": question, "lock": lock}


def _check_ms(blocks: list[dict[str, Any]]) -> float:
    """The stand-in's Block Kit check of `blocks`, in this process: milliseconds per check."""
    from bot.playground.webapi import validate_blocks

    if validate_blocks(blocks):
        raise SystemExit(f"standin_cpu: the stand-in refuses these blocks: {validate_blocks(blocks)}")
    n = 300
    return 1000 * timeit.timeit(lambda: validate_blocks(blocks), number=n) / n


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=400, help="calls of each kind per round")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    sys.path.insert(0, str(HERE))
    from bench.processes import free_port, group_cpu_seconds, http_ok, wait_until
    from bot.slack.transport import KeepAliveWebClient

    port = free_port()
    standin = subprocess.Popen(
        [sys.executable, "-m", "bench.standin", str(port)],
        env={**os.environ, "PYTHONPATH": str(HERE)},
        cwd=HERE,
        start_new_session=True,  # its own process group, whose CPU is read
    )
    per_call: dict[str, list[tuple[float, float]]] = {}
    try:
        wait_until(lambda: http_ok(f"http://127.0.0.1:{port}/bench/ping"), 20, "the Web API stand-in")
        web = KeepAliveWebClient(token="xoxb-bench-0000", base_url=f"http://127.0.0.1:{port}/api/")
        web.conversations_join(channel=CHANNEL)
        root = web.chat_postMessage(channel=CHANNEL, text="a thread for the replies")["ts"]
        sent, sent_blocks = _calls(web, root)
        for call in sent.values():
            call()  # warm: imports, the connection, the stand-in's first parse
        for _ in range(args.rounds):
            for name, call in sent.items():
                cpu0, wall0 = group_cpu_seconds(standin.pid), time.perf_counter()
                for _ in range(args.calls):
                    call()
                wall = (time.perf_counter() - wall0) / args.calls
                cpu = (group_cpu_seconds(standin.pid) - cpu0) / args.calls
                per_call.setdefault(name, []).append((1000 * cpu, 1000 * wall))
        checks = {name: _check_ms(b) for name, b in sent_blocks.items()}
    finally:
        standin.terminate()
        standin.wait(10)
    print(f"A full cycle's Web API calls at the stand-in ({args.calls} of each x {args.rounds} rounds; medians)")
    summary: dict[str, Any] = {}
    for name, rounds in per_call.items():
        cpu = statistics.median(r[0] for r in rounds)
        wall = statistics.median(r[1] for r in rounds)
        summary[name] = {"standin_cpu_ms": round(cpu, 3), "caller_wall_ms": round(wall, 3)}
        print(f"  {name:32s} stand-in CPU {cpu:.3f} ms   caller's wall {wall:.3f} ms")
    total = sum(v["standin_cpu_ms"] for v in summary.values())
    print(f"  the four together: stand-in CPU {total:.3f} ms per cycle")
    print(
        f"  of which its Block Kit check, in-process: question {checks['question']:.3f} ms,"
        f" lock {checks['lock']:.3f} ms"
    )
    print(json.dumps({"calls": summary, "block_check_ms": checks}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
