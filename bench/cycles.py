"""Full cycles driven as Slack would drive them: runs created and enqueued with no thread root
(`/parley` posts the root from `parley serve` before it enqueues, and leaves it to the worker
only when that post fails; here the worker always posts it, so all four of a cycle's Web API
calls are the worker's), answerer threads clicking Submit on each question as soon as its run
parks (one thread finds the paused runs and hands them out), until all succeed.

Shared by the full-cycle throughput (measurement 4) and the scale-out (measurement 11).
"""

from __future__ import annotations

import queue as queue_module
import threading
import time
from typing import Any

import redis

from bench.agents import AGENT, three_item_request
from bench.seed import SubmitClicks, seeded
from bench.stack import Poster
from bot.playground.workspace import TEAM_ID
from workers.runtime.queues import enqueue_run, queue
from workers.store.records import RunStatus
from workers.store.runs import RunStore

ANSWERERS = 4


class CountingRedis(redis.Redis):
    """The bench's own polling connection: it counts the commands it sends, to subtract them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent = 0
        self._lock = threading.Lock()

    def execute_command(self, *args: Any, **options: Any) -> Any:
        with self._lock:
            self.sent += 1
        return super().execute_command(*args, **options)


class Cycles:
    """Full cycles against one system. What the bot would do (create, enqueue) goes through
    `client`; the bench's own polling (paused runs, their questions, the finished count)
    through `poll`, which counts its commands."""

    def __init__(self, url: str, port: int) -> None:
        self.client, self.poll, self.port = redis.Redis.from_url(url), CountingRedis.from_url(url), port
        self.store, self.watch = RunStore(self.client), RunStore(self.poll)
        self.clicks = SubmitClicks(three_item_request())
        self.statuses: dict[int, int] = {}
        self._lock = threading.Lock()

    def batch(self, m: int) -> float:
        """Runs/s for `m` runs from create to succeeded; a click not acked 200 stops the batch."""
        done_before = self.watch.count(RunStatus.SUCCEEDED)
        stop = threading.Event()
        todo: queue_module.SimpleQueue[str | None] = queue_module.SimpleQueue()
        threads = [threading.Thread(target=self._find_paused, args=(todo, stop), daemon=True)]
        threads += [threading.Thread(target=self._answer, args=(todo,), daemon=True) for _ in range(ANSWERERS)]
        for t in threads:
            t.start()
        t0 = time.perf_counter()
        pq = queue(self.client)
        for i in range(m):
            conversation = {"host": "slack", "team": TEAM_ID, "channel": f"C0BENCH{i % 64:02d}"}
            run = self.store.create(AGENT, "", f"U0B{i % 100:03d}", conversation)
            enqueue_run(pq, run.id, run.job)
        deadline = time.monotonic() + 180
        try:
            while self.watch.count(RunStatus.SUCCEEDED) < done_before + m:
                refused = any(status != 200 for status in self.statuses)  # that run would never finish
                if refused or time.monotonic() > deadline:
                    raise RuntimeError(f"full cycles stalled: {self.store.counts()}, acks by status {self.statuses}")
                time.sleep(0.005)
            return m / (time.perf_counter() - t0)
        finally:
            stop.set()
            threads[0].join()
            for _ in range(ANSWERERS):
                todo.put(None)
            for t in threads[1:]:
                t.join()

    def _find_paused(self, todo: queue_module.SimpleQueue[str | None], stop: threading.Event) -> None:
        """One thread finds the newly paused runs and hands each to an answerer once. The answerers
        wait on the queue, so the bench's polling costs one index read per 5 ms, whatever their number."""
        handed: set[str] = set()
        while not stop.is_set():
            fresh = [run_id for run_id in self.watch.list_ids(RunStatus.PAUSED, limit=200) if run_id not in handed]
            handed.update(fresh)
            for run_id in reversed(fresh):  # oldest first
                todo.put(run_id)
            if not fresh:
                time.sleep(0.005)

    def _answer(self, todo: queue_module.SimpleQueue[str | None]) -> None:
        poster, r = Poster(self.port), self.poll
        while (run_id := todo.get()) is not None:
            status = poster.post(self.clicks.body(seeded(r, run_id)))
            with self._lock:
                self.statuses[status] = self.statuses.get(status, 0) + 1
        poster.close()
