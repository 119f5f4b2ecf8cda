"""`python -m bench --peers`: Parley side by side with Prefect's pause and suspend, in one run.

Starts the bench's stack (Web API stand-in, `parley serve`) and a local `prefect server
start` (SQLite, its own PREFECT_HOME), then measures, alternating Parley and the peer
round by round:

1. answer → code running again: Parley's signed Submit → the line after `run.ask`
   (`bench.m_resume`'s sample); Prefect's `resume_flow_run(..., run_input=...)` → the
   line after `pause_flow_run(wait_for_input=...)` at the default 10 s poll and at 0.1 s,
   and after `suspend_flow_run(wait_for_input=...)` under `flow.serve()` at the runner's
   default 10 s poll and at 1 s (its setting is whole seconds);
2. a burst of 8 answers at once: when the last of the 8 runs is running again;
3. memory held by N paused runs: Parley's Redis `used_memory` delta (no process);
   Prefect's paused flows' PSS plus the server's RSS growth, and for suspended runs the
   server's growth alone; then each side's fixed processes.

Prefect's answers land at a random point of its poll cycle. The slow default-poll cases
take fewer samples (see `PEER_SAMPLES`). Results: the table on stdout and
`bench/results/peers.{json,md}`. Without the `peers` extra it says how to get it and skips.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import report
from bench.m_footprint import bulk
from bench.measurement import Result, Row, dump_json
from bench.peers import INSTALL_HINT, prefect_version
from bench.peers.memory import NOTHING, Memory, group_memory
from bench.peers.prefect_server import PrefectServer
from bench.peers.rigs import ParleyRig, PauseRig, SuspendRig, answer_paused
from bench.peers.rows import MB, latency_row, memory_rows
from bench.processes import Proc
from bench.redis_db import connect, flush
from bench.stack import Stack
from bench.stats import Dist

PARLEY_PER_ROUND = 10
PEER_SAMPLES = {"pause-10": 3, "pause-0.1": 5, "suspend-10": 2, "suspend-1": 3}
"""Prefect samples per round for each case; the default-poll cases wait seconds per sample."""
BURST = 8
MANY_BATCH = 10
"""Paused flows started at once for the N-paused-runs memory figure (each imports Prefect)."""
MANY_LIMIT_S = 480
"""Starting paused flows stops after this long: N is then as many as fit (the table says which N)."""
MANY_SETTLE_S = 10


def _log(started: float, what: str) -> None:
    print(f"[{time.perf_counter() - started:6.1f}s] peers: {what}", file=sys.stderr, flush=True)


def _kill(stack: Stack, procs: list[Proc]) -> None:
    """SIGKILL each paused flow's own process group at once (a paused flow holds nothing to save), then reap."""
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
    stack.stop(procs)


def _alternate(rounds: int, sides: list[tuple[Dist, Callable[[], float], int]]) -> None:
    """Each round takes every side's samples in turn; odd rounds reverse the order."""
    for rnd in range(rounds):
        for dist, sample, k in sides if rnd % 2 == 0 else sides[::-1]:
            dist.add_round([sample() for _ in range(k)])


def latency(stack: Stack, server: PrefectServer, parley: ParleyRig, rounds: int, result: Result) -> SuspendRig | None:
    """Measurement 1, case by case; hands back the fast suspend rig (the burst uses it)."""
    cases: list[tuple[str, str, Callable[[], Any]]] = [
        ("pause-10", "pause, poll 10 s (default)", lambda: PauseRig(server, 10, rounds * PEER_SAMPLES["pause-10"])),
        ("pause-0.1", "pause, poll 0.1 s", lambda: PauseRig(server, 0.1, rounds * PEER_SAMPLES["pause-0.1"])),
        ("suspend-10", "suspend + serve, poll 10 s (default)", lambda: SuspendRig(server, 10)),
        ("suspend-1", "suspend + serve, poll 1 s", lambda: SuspendRig(server, 1)),
    ]
    kept: SuspendRig | None = None
    for key, case, make in cases:
        rig = None
        try:
            rig = make()
            p, q = Dist(), Dist()
            _alternate(rounds, [(p, parley.sample, PARLEY_PER_ROUND), (q, rig.sample, PEER_SAMPLES[key])])
            result.detail[f"latency {case}"] = {"parley": p.summary(), "prefect": q.summary()}
            result.rows.append(latency_row(case, "p50 ms", p, q))
        except Exception as exc:
            traceback.print_exc()
            stack.keep_logs = True
            result.rows.append(Row("P1 answer -> running", case, "error", float("nan"), note=str(exc)[:200]))
        print(f"peers: {case}: done", file=sys.stderr, flush=True)
        if key == "suspend-1" and isinstance(rig, SuspendRig):
            kept = rig
        elif rig is not None:
            stack.stop([rig.proc])
    return kept


def _failed(stack: Stack, result: Result, measure: str, case: str, exc: Exception) -> None:
    """Record a failed case as an error row (its logs kept); the other cases still run."""
    traceback.print_exc()
    stack.keep_logs = True
    result.rows.append(Row(measure, case, "error", float("nan"), note=str(exc)[:200]))


def burst(
    stack: Stack,
    server: PrefectServer,
    parley: ParleyRig,
    fast: SuspendRig | None,
    rounds: int,
    result: Result,
    mem: dict[str, Memory],
) -> None:
    """Measurement 2, pause and suspend each beside its own Parley bursts; a failure in one keeps the other.

    Also takes the memory of 8 paused and 8 suspended runs (in `mem`), in the first round.
    """
    assert server.proc is not None
    mem[f"server before {BURST}"] = group_memory(server.proc.pid)
    pairs: list[tuple[str, Dist, Dist]] = []
    p, q = Dist(), Dist()
    rigs: list[PauseRig] = []
    try:
        for _ in range(BURST):
            rigs.append(PauseRig(server, 0.1, rounds))
        for rnd in range(rounds):
            p.add_round([parley.burst(BURST)])
            ids = [r.paused() for r in rigs]
            if rnd == 0:
                mem[f"{BURST} paused flows"] = sum((group_memory(r.proc.pid) for r in rigs), NOTHING)
                mem[f"server, {BURST} paused"] = group_memory(server.proc.pid)
            q.add_round([answer_paused(rigs, ids)])
    except Exception as exc:
        _failed(stack, result, "P2 burst", f"{BURST} at once, pause, poll 0.1 s", exc)
    finally:
        _kill(stack, [r.proc for r in rigs])
    pairs.append(("pause, poll 0.1 s", p, q))
    if fast is not None:
        p, s = Dist(), Dist()
        try:
            for rnd in range(rounds):
                p.add_round([parley.burst(BURST)])
                runs = fast.suspended(BURST)
                if rnd == 0:
                    time.sleep(1)  # the suspended runs' processes have exited
                    mem[f"runner, {BURST} suspended"] = group_memory(fast.proc.pid)
                    mem[f"server, {BURST} suspended"] = group_memory(server.proc.pid)
                s.add_round([fast.answer(runs)])
        except Exception as exc:
            _failed(stack, result, "P2 burst", f"{BURST} at once, suspend + serve, poll 1 s", exc)
        pairs.append(("suspend + serve, poll 1 s", p, s))
    for case, parley_dist, peer in pairs:
        if peer.samples:
            row = latency_row(f"{BURST} at once, {case}", "last running ms", parley_dist, peer)
            result.rows.append(replace(row, measure="P2 burst"))
            result.detail[f"burst {case}"] = {"parley": parley_dist.summary(), "prefect": peer.summary()}


def paused_many(server: PrefectServer, stack: Stack, n: int, limit_s: float) -> tuple[int, dict[str, Memory]]:
    """Up to `n` paused flows at the default poll, started `MANY_BATCH` at a time until `limit_s` has passed.

    Hands back how many were paused (as many as fit in the time) with their PSS and the server's memory.
    """
    assert server.proc is not None
    before = group_memory(server.proc.pid)
    rigs: list[PauseRig] = []
    deadline = time.monotonic() + limit_s
    try:
        try:
            while len(rigs) < n and time.monotonic() < deadline:
                batch: list[PauseRig] = []
                for _ in range(min(MANY_BATCH, n - len(rigs))):
                    batch.append(PauseRig(server, 10, 1))
                    rigs.append(batch[-1])
                for r in batch:
                    r.paused(600, confirm=False)
            time.sleep(MANY_SETTLE_S)  # the last flows' signals come just before they call pause_flow_run
        except Exception:  # e.g. the server stops answering: the flows started still hold their memory
            traceback.print_exc()
            stack.keep_logs = True
        got = len(rigs)
        return got, {
            f"server before {got}": before,
            f"{got} paused flows": sum((group_memory(r.proc.pid) for r in rigs), NOTHING),
            f"server, {got} paused": group_memory(server.proc.pid),
        }
    finally:
        _kill(stack, [r.proc for r in rigs])


def _fixed(stack: Stack, parley: ParleyRig) -> dict[str, float]:
    """Parley's fixed processes: `parley serve` and one worker (PSS), and the Redis server's RSS."""
    serve = sum((group_memory(p.pid) for p in stack.procs if p.name.endswith("parley-serve")), NOTHING)
    worker = sum((group_memory(p.pid) for p in parley.procs), NOTHING)
    rss = int(stack.client.info("memory")["used_memory_rss"]) / MB
    return {"serve": serve.pss_mb, "worker": worker.pss_mb, "redis": rss, "total": serve.pss_mb + worker.pss_mb + rss}


def measure(stack: Stack, server: PrefectServer, rounds: int, big_n: int, many_limit_s: float) -> Result:
    started = time.perf_counter()
    result = Result()
    assert server.proc is not None
    mem = {"server at start": group_memory(server.proc.pid)}
    parley_bytes: dict[int, float] = {}
    for n in sorted({BURST, big_n, 100}):
        parley_bytes[n] = bulk(stack.client, n)[1] * n
    _log(started, "Parley's paused runs seeded in Redis for the memory figures")
    per_burst = 2 * rounds * BURST
    parley = ParleyRig(stack, 5 + 4 * rounds * PARLEY_PER_ROUND + per_burst + 10)
    try:
        for _ in range(5):  # warm: the worker's imports, the first Web API connection
            parley.sample()
        fast = latency(stack, server, parley, rounds, result)
        _log(started, "answer -> running measured")
        burst(stack, server, parley, fast, rounds, result, mem)
        _log(started, "bursts measured")
        if fast is not None:
            stack.stop([fast.proc])
        fixed = _fixed(stack, parley)
    finally:
        parley.close()
    try:
        got, many = paused_many(server, stack, big_n, many_limit_s)
        mem.update(many)
        if got not in parley_bytes:  # fewer fit in the time: Parley at the same N (nothing else is in Redis now)
            parley_bytes[got] = bulk(stack.client, got)[1] * got
        result.detail["paused_many"] = {"asked": big_n, "paused": got, "limit_s": many_limit_s}
        _log(started, f"{got} of {big_n} paused flows measured")
    except Exception as exc:
        traceback.print_exc()
        stack.keep_logs = True
        result.detail["paused_many_error"] = str(exc)
    result.rows += memory_rows(parley_bytes, mem, fixed)
    result.detail["memory"] = {k: vars(v) for k, v in mem.items()}
    result.detail["parley_used_memory_bytes"] = parley_bytes
    result.detail["parley_fixed_mb"] = fixed
    return result


def run(redis_url: str, rounds: int, big_n: int, out: Path) -> int:
    """The whole `--peers` run; 0 with a one-line hint when Prefect is not installed."""
    version = prefect_version()
    if version is None:
        print(INSTALL_HINT)
        return 0
    started = time.perf_counter()
    client = connect(redis_url)
    flush(client)
    with Stack(redis_url, client) as stack:
        stack.start_servers()
        server = PrefectServer(stack)
        os.environ.update(server.env())  # before this process imports prefect (to resume runs)
        server.start()
        _log(started, f"Prefect {version} server up on port {server.port}")
        try:
            result = measure(stack, server, rounds, big_n, MANY_LIMIT_S)
        except Exception:
            stack.keep_logs = True
            raise
    flush(client)
    seconds = time.perf_counter() - started
    meta = {
        "command": "python -m bench --peers"
        + (f" --rounds {rounds}" if rounds != 2 else "")
        + (f" --peers-n {big_n}" if big_n != 100 else ""),
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "prefect": version,
        "redis": client.info("server")["redis_version"],
        "rounds": rounds,
        "peer_samples_per_round": PEER_SAMPLES,
        "parley_samples_per_round": PARLEY_PER_ROUND,
        "seconds": seconds,
        "load_average": os.getloadavg(),
    }
    print(report.text_table(result.rows))
    print(f"\npeers run: {seconds:.0f} s; Prefect {version}; load average {meta['load_average'][0]:.1f}")
    out.mkdir(parents=True, exist_ok=True)
    dump_json(out / "peers.json", {"meta": meta, "rows": [r.as_dict() for r in result.rows], "detail": result.detail})
    head = (
        f"# Parley beside Prefect {version}\n\n`{meta['command']}` on {meta['when']} ({meta['cpus']} CPUs, "
        f"Redis {meta['redis']}, local `prefect server start` on SQLite); took {seconds:.0f} s. "
        "Ratio = Parley / Prefect; Spread = range of the per-round medians (Parley | Prefect).\n\n"
    )
    (out / "peers.md").write_text(head + report.markdown_table(result.rows) + "\n")
    return 0
