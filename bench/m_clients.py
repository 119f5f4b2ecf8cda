"""14. The Python clients' waits: `AsyncParley` beside `Parley`, each in a process of its own.

- Threads and memory per wait: N API questions are asked (untimed), then one process holds a
  wait on each with `Parley` (a thread per wait, as its callers do) and another with
  `AsyncParley` (a task per wait). Each reports its threads, resident memory and reserved
  address space (a thread's stack is reserved whole, resident only as it is touched) before
  and after; the rows are the differences divided by N, `AsyncParley` against `Parley`.
- Answer → return: while those N waits stay open, one more question is asked and waited on,
  and a signed Submit click answers it; timed from the click to the moment the client's
  `wait` returns. Baseline: the same with no other wait open (N = 0), alternating.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from bench.agents import three_item_request
from bench.m_api import Api, _click
from bench.measurement import Config, Result, Row
from bench.processes import python_argv
from bench.redis_db import flush
from bench.seed import SubmitClicks
from bench.stack import Poster, Stack
from bench.stats import Dist, ratio
from workers.questions import tokens
from workers.store.questions import QuestionStore


class Holder:
    """One `bench.client_waits` process holding waits, and the lines it prints."""

    def __init__(self, mode: str, api: Api, ids: list[str], folder: Path) -> None:
        listed = folder / f"{mode}-{len(ids)}.txt"
        listed.write_text("\n".join(ids))
        base = str(api.http.base_url).rstrip("/")
        self.proc = subprocess.Popen(
            python_argv("-m", "bench.client_waits", mode, base, api.token, str(listed)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.footprint = self._line()

    def _line(self) -> dict[str, Any]:
        out: IO[str] | None = self.proc.stdout
        line = out.readline() if out is not None else ""
        if not line:
            raise RuntimeError(f"bench.client_waits exited with {self.proc.poll()}")
        got: dict[str, Any] = json.loads(line)
        return got

    def answer_to_return(self, stack: Stack, api: Api, poster: Poster, clicks: SubmitClicks) -> float:
        created = api.ask()
        assert self.proc.stdin is not None
        self.proc.stdin.write(created["id"] + "\n")
        self.proc.stdin.flush()
        self._line()  # "sent"
        time.sleep(0.1)  # the long-poll is open on the server
        body = _click(stack, clicks, created)
        t0 = time.time()
        if poster.post(body) != 200:
            raise RuntimeError("parley serve refused a Submit click")
        returned = self._line()
        return (float(returned["at"]) - t0) * 1000

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def _per_wait(footprint: dict[str, Any], n: int, what: str) -> float:
    return float(footprint[f"{what}_after"] - footprint[f"{what}_before"]) / n


def measure(stack: Stack, cfg: Config) -> Result:
    flush(stack.client)
    n = cfg.pick(200, 1000)
    token = tokens.create(
        QuestionStore(stack.client), f"bench-{secrets.token_hex(3)}", ["ask"], rate_limit=10**9, open_questions=10**9
    )
    api = Api(stack.serve_port, token.token)
    procs = stack.parley_workers(1, "simple")
    clicks, poster = SubmitClicks(three_item_request()), Poster(stack.serve_port)
    per_round = cfg.pick(8, 30)
    holders: list[Holder] = []
    try:
        with tempfile.TemporaryDirectory(prefix="parley-bench-waits-") as tmp:
            open_ids = [api.ask()["id"] for _ in range(n)]
            sync = Holder("sync", api, open_ids, Path(tmp))
            holders.append(sync)
            sync.close()
            loaded = Holder("async", api, open_ids, Path(tmp))
            alone = Holder("async", api, [], Path(tmp))
            holders += [loaded, alone]
            for _ in range(3):
                loaded.answer_to_return(stack, api, poster, clicks)
                alone.answer_to_return(stack, api, poster, clicks)
            busy, quiet = Dist(), Dist()
            for rnd in range(cfg.rounds):
                sides = [(loaded, busy), (alone, quiet)]
                for holder, dist in sides if rnd % 2 == 0 else sides[::-1]:
                    dist.add_round([holder.answer_to_return(stack, api, poster, clicks) for _ in range(per_round)])
    finally:
        for h in holders:
            h.close()
        poster.close()
        api.http.close()
        stack.stop(procs)
    name = f"14 client waits ({n} open)"
    rows = []
    for metric, what in (("threads per wait", "threads"), ("resident KB", "rss_kb"), ("reserved KB", "vm_kb")):
        mine, base = _per_wait(loaded.footprint, n, what), _per_wait(sync.footprint, n, what)
        rows.append(Row(name, "AsyncParley | Parley", metric, mine, base, ratio(mine, base) if base > 0 else None))
    return Result(
        rows=[
            *rows,
            Row(
                "14 answer → return",
                f"AsyncParley, {n} open | none",
                "p50 ms",
                busy.p50,
                quiet.p50,
                ratio(busy.p50, quiet.p50),
                spread=f"{busy.spread()} | {quiet.spread()}",
            ),
            Row("14 answer → return", f"AsyncParley, {n} open | none", "p99 ms", busy.p99, quiet.p99),
        ],
        detail={"open_waits": n, "sync": sync.footprint, "async": loaded.footprint},
    )
