"""8. Retention: after finished runs are purged, Redis's memory is back to where it started.

On an empty database, the empty `used_memory` is taken first. Then:
- N finished runs are seeded through the store's own writes, each as a real run ends:
  paused on a 3-item question (`bench.seed.seed_paused`), answered (`RunStore.close`),
  claimed, its question's lock and final message journalled, succeeded with its
  history entry (`RunStore.transition`);
- a few runs are completed for real by a `parley worker` (started, asked, answered
  through acceptance, resumed, finished), so their RQ job records and results, which
  RQ keeps for `result_ttl`, are there too; one of them is checked field by field
  against a seeded one (`bench.seed.check_fidelity`).
Then the sweep runs, with a one-second retention, until a pass purges nothing, and
`used_memory` is read again. Target: back within 10% of the empty figure.

`used_memory` is instance-wide, so this runs on a private redis-server (the same binary
as the bench's server, no persistence) when there is one; on the bench's own server,
other databases' traffic adds noise. The bench agent's own timing keys
(`bench:asked:*`, `bench:resumed:*`) are the bench's, not the runs', and are deleted
before the final reading; whatever else is left in the database is listed in the JSON.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import redis
from rq import Queue, Worker

from bench.agents import AGENT, three_item_request
from bench.m_footprint import _server_binary, used_memory
from bench.measurement import Config, Result, Row
from bench.processes import free_port, python_argv, wait_until
from bench.redis_db import BENCH_DB, flush
from bench.seed import check_fidelity, seed_paused
from bench.stack import Stack
from bot.playground.workspace import TEAM_ID
from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.runtime.queues import QUEUE_NAME, enqueue_run
from workers.runtime.sweep import sweep
from workers.runtime.wiring import Runtime, RuntimeSettings
from workers.store import journal_names, keys
from workers.store.question_closes import Closed
from workers.store.records import CloseMode, RunStatus
from workers.store.run_writes import history_entry
from workers.store.runs import RunStore

SEEDED = 10_000
TARGET = 1.10  # used_memory after the purge, at most this times the empty figure
RETENTION = 1.0
ANSWERS = [
    Answer(id="env", choice="production"),
    Answer(id="regions", choices=["eu-west-1"]),
    Answer(id="why", free_text="Hotfix for the login outage"),
]


def measure(stack: Stack, cfg: Config) -> Result:
    real = cfg.pick(50, 200)
    binary = _server_binary(str(stack.client.info("server")["redis_version"]))
    if binary is None:
        return _measure_on(stack, stack.client, stack.redis_url, real, private=False)
    port = free_port()
    proc = stack.start_process(
        "retention-redis", [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    )
    try:
        client = redis.Redis(port=port, db=BENCH_DB)
        wait_until(lambda: bool(client.ping()), 10, "the private redis-server", proc)
        return _measure_on(stack, client, f"redis://127.0.0.1:{port}/{BENCH_DB}", real, private=True)
    finally:
        stack.stop([proc])


def _reading(client: redis.Redis, private: bool) -> tuple[int, int | None]:
    """`used_memory` once Redis's crons have shrunk its tables and buffers; and, on a private
    server, again without Redis's per-command latency histograms.

    Redis (7.0 and later, `latency-tracking yes`) allocates a histogram the first time it
    runs each command name and keeps it until `CONFIG RESETSTAT`: about 1 MB once Parley's
    and RQ's commands have all run, a fixed cost of the server rather than data of any run.
    Resetting them is only done on the private server, whose statistics nobody else reads.
    """
    time.sleep(2.0)
    raw = used_memory(client)
    if not private:
        return raw, None
    client.config_resetstat()
    return raw, used_memory(client)


def _measure_on(stack: Stack, client: redis.Redis, url: str, real: int, *, private: bool) -> Result:
    flush(client)
    empty_raw, empty = _reading(client, private)
    store = RunStore(client)
    rt = Runtime.build(client, settings=RuntimeSettings(retention=RETENTION))

    t0 = time.perf_counter()
    seeded = seed_finished(store, SEEDED)
    seed_s = time.perf_counter() - t0
    real_ids = run_for_real(stack, rt, url, real)
    problems = fidelity(client, real_ids[0], seeded[0]) if real_ids and seeded else []
    full, _ = _reading(client, False)
    keys_full = int(client.dbsize())

    time.sleep(RETENTION)
    t0 = time.perf_counter()
    purged, passes = 0, 0
    while n := len(sweep(rt).purged):  # the sweep's passes, until one finds nothing to purge
        purged += n
        passes += 1
    purge_s = time.perf_counter() - t0
    for name in client.scan_iter(match="bench:*", count=1000):
        client.delete(name)  # the bench agent's timing keys
    left = sorted(k.decode() for k in client.scan_iter(count=1000))
    after_raw, after = _reading(client, private)
    runs = SEEDED + len(real_ids)
    runs_left = [name for name in left if any(run_id in name for run_id in [*seeded, *real_ids])]
    where = "private Redis" if private else "the bench's server (shared: other databases add noise)"
    first = (after, empty) if after is not None and empty is not None else (after_raw, empty_raw)
    rows = [
        Row(
            "8 retention",
            f"{runs:,} finished runs purged, {where}" + (", latency histograms reset" if private else ""),
            "used_memory B",
            float(first[0]),
            float(first[1]),
            first[0] / first[1],
            f"<= {TARGET:.2f}x",
            first[0] / first[1] <= TARGET and purged == runs and not runs_left,
            note=f"{full:,} B with the runs ({keys_full:,} keys); {len(left)} keys left, {len(runs_left)} of a run's",
        ),
    ]
    if private:
        rows.append(
            Row(
                "8 retention",
                f"{runs:,} finished runs purged, private Redis, as is",
                "used_memory B",
                float(after_raw),
                float(empty_raw),
                after_raw / empty_raw,
                note="includes Redis's latency histogram per command name it has run (fixed, not per run)",
            )
        )
    rows.append(
        Row(
            "8 retention",
            f"sweep purge, {passes} passes",
            "runs/s",
            purged / purge_s if purge_s else float("nan"),
            note=f"{purged:,} runs in {purge_s:.1f} s; {len(real_ids)} ran for real and had RQ jobs",
        )
    )
    detail: dict[str, Any] = {
        "where": where,
        "seeded_runs": SEEDED,
        "real_runs": len(real_ids),
        "seed_seconds": round(seed_s, 2),
        "used_memory": {
            "empty": empty_raw,
            "empty_histograms_reset": empty,
            "with_runs": full,
            "after_purge": after_raw,
            "after_purge_histograms_reset": after,
        },
        "keys_with_runs": keys_full,
        "purged": purged,
        "sweep_passes": passes,
        "purge_seconds": round(purge_s, 2),
        "keys_left": left[:50],
        "fidelity_problems": problems,
    }
    if problems:
        rows[0].note += f"; seeded differs from real: {problems[:2]}"
    flush(client)
    return Result(rows=rows, detail=detail)


def fidelity(client: redis.Redis, real: str, seeded: str) -> list[str]:
    """`check_fidelity`, with each run's own question id in journal field names (`fx:lock:<id>`) read as one."""
    problems = [p for p in check_fidelity(client, real, seeded) if not p.startswith(keys.journal(real))]
    shapes = [_journal_fields(client, run_id) for run_id in (real, seeded)]
    if shapes[0] != shapes[1]:
        problems.append(f"journal fields: real {sorted(shapes[0])}, seeded {sorted(shapes[1])}")
    return problems


def _journal_fields(client: redis.Redis, run_id: str) -> set[str]:
    iid = (client.hget(keys.run(run_id), "interrupt") or b"").decode()
    return {f.decode().replace(iid, "<question>") for f in client.hkeys(keys.journal(run_id))}


def seed_finished(store: RunStore, n: int) -> list[str]:
    """`n` runs that asked one question, were answered and succeeded, written as a worker writes them."""
    request = three_item_request()
    answers = request.validate_answers(ANSWERS)
    messages = [
        [f"C0BENCH{i % 64:02d}", f"{1_700_000_000 + i}.000100", f"{1_700_000_000 + i}.000200"] for i in range(n)
    ]
    paused = seed_paused(store, n, request, agent=AGENT, user_for=lambda i: f"U0B{i % 100:03d}", messages=messages)
    result = "deployed to production in eu-west-1"
    for s in paused:
        interrupt = store.interrupt(s.iid)
        assert interrupt is not None
        closed = store.close(interrupt, CloseMode.ANSWER, s.user, answers, secrets.token_hex(8))
        if not isinstance(closed, Closed) or closed.again:
            raise RuntimeError(f"seeding: the answer to {s.iid} was not accepted anew: {closed}")
        ok, epoch, _ = store.transition(
            s.run_id, [RunStatus.QUEUED], RunStatus.RUNNING, lease=repr(time.time() + 30), bump_epoch=True
        )
        if not ok:
            raise RuntimeError(f"seeding: {s.run_id} could not be claimed ({epoch})")
        for field in (journal_names.effect(journal_names.lock(s.iid)), journal_names.effect(journal_names.FINAL)):
            store.record(s.run_id, int(epoch), field, "intent")
            store.record(s.run_id, int(epoch), field, "done")
        store.transition(
            s.run_id,
            [RunStatus.RUNNING],
            RunStatus.SUCCEEDED,
            epoch=int(epoch),
            lease="clear",
            history=history_entry(RunStatus.SUCCEEDED.value, result=result),
            result=result,
        )
    return [s.run_id for s in paused]


def run_for_real(stack: Stack, rt: Runtime, url: str, n: int) -> list[str]:
    """`n` runs a real `parley worker` starts, pauses, resumes after an accepted answer, and finishes."""
    proc = stack.start_process("retention-worker", python_argv("-m", "parley.cli", "worker"), REDIS_URL=url)
    queue = Queue(QUEUE_NAME, connection=rt.redis)
    try:
        wait_until(lambda: Worker.count(queue=queue) >= 1, 30, "the retention bench's worker", proc)
        finished_before = rt.store.count(RunStatus.SUCCEEDED)
        conversation = {"host": "slack", "team": TEAM_ID, "channel": "C0BENCH00"}
        ids = []
        for i in range(n):
            run = rt.store.create(AGENT, "", f"U0R{i % 10:03d}", conversation)
            enqueue_run(rt.queue, run.id, run.job)
            ids.append(run.id)
        wait_until(lambda: rt.store.count(RunStatus.PAUSED) >= n, 120, f"{n} runs to pause", proc)
        for run in rt.store.runs(ids):
            accept(rt, run.interrupt, run.started_by, ANSWERS)
        done = finished_before + n
        wait_until(lambda: rt.store.count(RunStatus.SUCCEEDED) >= done, 120, f"{n} runs to finish", proc)
    finally:
        stack.stop([proc])
    return ids
