"""9. Several questions at once: `run.ask_all` of 10 questions against 10 `run.ask`s in sequence.

Both sides are the same ten 3-item questions, each to its own person, asked by a run on
one real `parley worker` and answered in-process through `accept` (the ack path is
measured by row 1). Per run:
- posting: ask_all, from just before the call to the last Web API call its execution made
  before parking (ten questions, and each person told by DM) (one execution); in sequence,
  the sum over the ten `ask`s of just-before-`ask` → the last call that execution made (its
  question and its DM) (ten executions). Both end after the DMs: ending at the questions'
  arrival would count nine DMs on the ask_all side (they follow each question) and none on
  the other;
- resume: ask_all, the last answer accepted → the agent's code after `ask_all` running; in
  sequence, the sum over the ten answers of accepted → the code after that `ask` running;
- worker time: the summed run time of every RQ job of the run (executions and, for
  ask_all, the small jobs that lock a question answered before the last);
- executions: the run's executions (first one plus resumes);
- footprint per paused question: `MEMORY USAGE` of the keys the paused run owns alone,
  over the questions it waits on (ask_all: 10 open at once; in sequence: the first one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import redis
from rq.job import Job
from rq.registry import FinishedJobRegistry

from bench.agents import ALL_AGENT, GROUP_SIZE, SEQ_AGENT, three_item_request
from bench.m_footprint import memory_of
from bench.measurement import Config, Result, Row
from bench.redis_db import flush
from bench.seed import run_keys
from bench.stack import Stack
from bench.stats import Dist, ratio
from bot.playground.workspace import TEAM_ID
from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.runtime.queues import EXECUTE, enqueue_run
from workers.runtime.wiring import Runtime
from workers.store import keys

ANSWERS = [Answer(id="env", choice="staging"), Answer(id="regions", choices=["eu-west-1"])]


def _wait(what: str, check: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"group measurement: timed out waiting for {what}")
        time.sleep(0.002)


def _f(r: redis.Redis, name: str) -> float:
    return float(r.get(name) or 0)


def _status(r: redis.Redis, run_id: str) -> bytes | None:
    return r.hget(keys.run(run_id), "status")


def _paused_on(r: redis.Redis, run_id: str) -> str:
    return (r.hget(keys.run(run_id), "interrupt") or b"").decode() if _status(r, run_id) == b"paused" else ""


def _jobs(rt: Runtime, run_id: str) -> dict[str, float]:
    """The summed run time of every finished job of `run_id`, and how many of them executed the run."""
    time.sleep(0.2)  # the last job's bookkeeping (ended_at) lands just after the run's own writes
    total, executions = 0.0, 0
    for job_id in FinishedJobRegistry(queue=rt.queue).get_job_ids():
        job = Job.fetch(job_id, connection=rt.redis, serializer=rt.queue.serializer)
        if job.args and job.args[0] == run_id and job.started_at and job.ended_at:
            total += (job.ended_at - job.started_at).total_seconds() * 1000
            executions += job.func_name == EXECUTE
    return {"worker_ms": total, "executions": float(executions)}


def _start(rt: Runtime, agent: str, thread: list[str]) -> str:
    channel, root, _ = thread
    run = rt.store.create(
        agent, "", "U0B999", {"host": "slack", "team": TEAM_ID, "channel": channel, "thread_ts": root}
    )
    rt.redis.set(keys.thread(channel, root), run.id)
    enqueue_run(rt.queue, run.id, run.job)
    return run.id


def _arrivals(stack: Stack, root: str, since: float) -> list[float]:
    return sorted(c["at"] for c in stack.calls("chat.postMessage", since) if c["thread_ts"] == root and not c["error"])


def _last_call(stack: Stack, since: float) -> float:
    """When the stand-in took the last Web API call after `since`: the run is parked, so its execution made no more."""
    return max(c["at"] for c in stack.calls("", since))


def _all_side(stack: Stack, rt: Runtime, thread: list[str], since: float) -> dict[str, float]:
    r = rt.redis
    run_id = _start(rt, ALL_AGENT, thread)
    _wait("the ask_all run to park", lambda: _paused_on(r, run_id))
    gid = _paused_on(r, run_id)
    group = rt.store.groups.group(gid)
    assert group is not None
    names = [*run_keys(r, run_id), keys.group(gid), *(keys.interrupt(i) for i in group.members)]
    footprint = memory_of(r, list(dict.fromkeys(names))) / GROUP_SIZE
    _wait("ten questions posted", lambda: len(_arrivals(stack, thread[1], since)) >= GROUP_SIZE)
    asked = _f(r, f"bench:asked:{run_id}")
    posting = (_last_call(stack, asked) - asked) * 1000
    for member in rt.store.groups.members(group):
        accept(rt, member, member.assignees[0], ANSWERS)
    accepted = time.time()
    _wait("the ask_all run to finish", lambda: _status(r, run_id) == b"succeeded")
    resume = (_f(r, f"bench:resumed:{run_id}") - accepted) * 1000
    return {"posting": posting, "resume": resume, "footprint": footprint, **_jobs(rt, run_id)}


def _seq_side(stack: Stack, rt: Runtime, thread: list[str], since: float) -> dict[str, float]:
    r = rt.redis
    run_id = _start(rt, SEQ_AGENT, thread)
    posting = resume = footprint = 0.0
    for k in range(GROUP_SIZE):
        _wait(
            f"question {k} to park the run", lambda k=k: _paused_on(r, run_id) and r.get(f"bench:asked:{run_id}:q{k}")
        )
        iid = _paused_on(r, run_id)
        if k == 0:
            footprint = float(memory_of(r, run_keys(r, run_id)))
        _wait(f"question {k} posted", lambda k=k: len(_arrivals(stack, thread[1], since)) > k)
        asked = _f(r, f"bench:asked:{run_id}:q{k}")
        posting += (_last_call(stack, asked) - asked) * 1000
        interrupt = rt.store.interrupt(iid)
        assert interrupt is not None
        accept(rt, interrupt, interrupt.assignees[0], ANSWERS)
        accepted = time.time()
        _wait(f"the run to go on after answer {k}", lambda k=k: r.get(f"bench:resumed:{run_id}:q{k}"))
        resume += (_f(r, f"bench:resumed:{run_id}:q{k}") - accepted) * 1000
    _wait("the sequence run to finish", lambda: _status(r, run_id) == b"succeeded")
    return {"posting": posting, "resume": resume, "footprint": footprint, **_jobs(rt, run_id)}


def measure(stack: Stack, cfg: Config) -> Result:
    r = stack.client
    flush(r)
    rt = Runtime.build(r)
    assert three_item_request().items  # both sides ask the bench's typical question
    threads = iter(stack.seed_messages(2 * cfg.rounds + 2))
    procs = stack.parley_workers(1, "simple")
    sides: dict[str, list[dict[str, float]]] = {"all": [], "seq": []}
    try:
        since = time.time() - 1
        _all_side(stack, rt, next(threads), since)  # warm the worker on both paths
        _seq_side(stack, rt, next(threads), since)
        for rnd in range(cfg.rounds):
            for side in ("all", "seq") if rnd % 2 == 0 else ("seq", "all"):
                run = _all_side if side == "all" else _seq_side
                sides[side].append(run(stack, rt, next(threads), time.time() - 1))
    finally:
        stack.stop(procs)
    rows = []
    for metric, unit in (
        ("posting", "ms"),
        ("resume", "ms"),
        ("worker_ms", "ms"),
        ("executions", "n"),
        ("footprint", "B"),
    ):
        a, s = Dist(), Dist()
        for x in sides["all"]:
            a.add_round([x[metric]])
        for x in sides["seq"]:
            s.add_round([x[metric]])
        label = {"worker_ms": "worker time", "footprint": "bytes per paused question"}.get(metric, metric)
        rows.append(
            Row(
                "9 ask_all x10",
                "vs 10 asks",
                f"{label} p50 {unit}" if unit == "ms" else label,
                a.p50,
                s.p50,
                ratio(a.p50, s.p50),
                spread=f"{a.spread()} | {s.spread()}",
            )
        )
    return Result(rows=rows, detail={"ask_all": sides["all"], "sequence": sides["seq"], "json": json.dumps(sides)})
