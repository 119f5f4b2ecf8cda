"""12. The HTTP API, each figure beside its baseline in the same run.

- ask → posted: `POST /api/v1/questions` to `parley serve` (token check, rate limit, the
  question's run created and executed in the serve process up to its post, the post, the
  park), timed to its `201`; against `POST /bench/post` to the bare app, which posts the same
  prebuilt blocks with the same `WebClient` from an async endpoint on a worker thread.
- Submit → long-poll return: an API question is asked (untimed), `GET ?wait=30` is opened,
  then a signed Submit click is sent; timed from the click to the long-poll's answer. Baseline:
  the resume baseline of measurement 2 (bare app POST → SET + enqueue → raw RQ job start).
- Submit → webhook delivered: the same with a `callback_url` on a loopback receiver in this
  process, timed from the click to the delivery's arrival (a real `parley worker` resumes the
  run, locks the message and runs the delivery job); same baseline.
- ack p99 with 200 long-polls open: measurement 1's closed loop (16 clients, Submit clicks on
  seeded paused runs) against `parley serve` while 200 `GET ?wait=60` are open on it, against
  the same load with none open, in alternating rounds.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.agents import AGENT, three_item_request
from bench.bare import BARE_QUEUE
from bench.m_ack import load
from bench.measurement import Config, Result, Row
from bench.processes import group_cpu_seconds
from bench.redis_db import flush
from bench.seed import Seeded, SubmitClicks, seed_paused
from bench.stack import Poster, Stack
from bench.stats import Dist, ratio
from bot.playground import LoopbackServer
from bot.slack import blocks
from workers.questions import tokens
from workers.store import ids, keys
from workers.store.questions import QuestionStore
from workers.store.runs import RunStore

CHANNEL = "C0GENERAL"
USER = "U0B001"
OPEN_POLLS = 200
ACK_TARGET = 1.5


@dataclass
class Api:
    """The API over one keep-alive client, with a bench token that no rate limit stops."""

    port: int
    token: str

    def __post_init__(self) -> None:
        self.http = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}", headers={"Authorization": f"Bearer {self.token}"}, timeout=70
        )

    def ask(self, **fields: Any) -> dict[str, Any]:
        body = {"request": three_item_request().model_dump(mode="json"), "channel": CHANNEL, **fields}
        resp = self.http.post("/api/v1/questions", json=body)
        if resp.status_code != 201:
            raise RuntimeError(f"the API refused a question: {resp.status_code} {resp.text[:300]}")
        return resp.json()


def _click(stack: Stack, clicks: SubmitClicks, created: dict[str, Any]) -> bytes:
    iid = stack.client.hget(keys.run(created["id"]), "interrupt")
    ts = created["message_ts"]
    return clicks.body(Seeded(created["id"], iid.decode() if iid else "", USER, created["channel"], ts, ts))


def _bare_resume(stack: Stack, poster: Poster, clicks: SubmitClicks) -> float:
    """Measurement 2's baseline: a click to the bare app → SET + enqueue → a raw RQ job starts."""
    fake = Seeded(ids.new_id(ids.RUN), ids.new_question_id(), USER, CHANNEL, "1.000001", "")
    t0 = time.time()
    if poster.post(clicks.body(fake)) != 200:
        raise RuntimeError("the bare app refused a Submit click")
    got = stack.client.blpop([f"bench:mark:{fake.iid}"], timeout=10)
    if got is None:
        raise TimeoutError("the raw job did not start within 10 s")
    return (float(got[1]) - t0) * 1000


def _ask_rows(stack: Stack, api: Api, cfg: Config) -> list[Row]:
    request = three_item_request()
    bare = httpx.Client(base_url=f"http://127.0.0.1:{stack.bare_port}", timeout=30)
    per_round = cfg.pick(10, 40)

    def parley_once() -> float:
        t0 = time.perf_counter()
        api.ask()
        return (time.perf_counter() - t0) * 1000

    def bare_once() -> float:
        question = blocks.question_blocks(request, ids.new_question_id(), assignees=[])
        body = {"channel": CHANNEL, "text": blocks.fallback_text(request), "blocks": question}
        t0 = time.perf_counter()
        if bare.post("/bench/post", json=body).status_code != 201:
            raise RuntimeError("the bare app did not post")
        return (time.perf_counter() - t0) * 1000

    for _ in range(3):
        parley_once()
        bare_once()
    parley, base = Dist(), Dist()
    for rnd in range(cfg.rounds):
        sides = [(parley_once, parley), (bare_once, base)]
        for fn, dist in sides if rnd % 2 == 0 else sides[::-1]:
            dist.add_round([fn() for _ in range(per_round)])
    bare.close()
    spread = f"{parley.spread()} | {base.spread()}"
    return [
        Row(
            "12 api ask → posted",
            "simple",
            "p50 ms",
            parley.p50,
            base.p50,
            ratio(parley.p50, base.p50),
            "",
            None,
            spread,
        ),
        Row("12 api ask → posted", "simple", "p99 ms", parley.p99, base.p99, ratio(parley.p99, base.p99)),
    ]


class Receiver:
    """A loopback webhook endpoint that notes when each delivery (by question id in the path) arrives."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.event = threading.Condition()

        async def hook(request: Request) -> Response:
            await request.body()
            with self.event:
                self.arrived.setdefault(request.path_params["qid"], time.time())
                self.event.notify_all()
            return Response(status_code=200)

        self.server = LoopbackServer(Starlette(routes=[Route("/hook/{qid}", hook, methods=["POST"])])).start()

    def wait(self, qid: str, timeout: float = 15) -> float:
        with self.event:
            if not self.event.wait_for(lambda: qid in self.arrived, timeout):
                raise TimeoutError(f"no webhook for {qid} within {timeout} s")
            return self.arrived[qid]


def _resume_rows(stack: Stack, api: Api, cfg: Config) -> list[Row]:
    clicks = SubmitClicks(three_item_request())
    receiver = Receiver()
    procs = stack.parley_workers(1, "simple") + stack.raw_workers(BARE_QUEUE, 1, "simple")
    per_round = cfg.pick(8, 30)
    sp, sb = Poster(stack.serve_port), Poster(stack.bare_port)

    def poll_once() -> float:
        created = api.ask()
        got: dict[str, float] = {}
        poll = threading.Thread(
            target=lambda: (
                api.http.get(f"/api/v1/questions/{created['id']}", params={"wait": 30}),
                got.update(at=time.time()),
            )
        )
        poll.start()
        time.sleep(0.1)  # the long-poll is open
        body = _click(stack, clicks, created)
        t0 = time.time()
        if sp.post(body) != 200:
            raise RuntimeError("parley serve refused a Submit click")
        poll.join(35)
        return (got["at"] - t0) * 1000

    def hook_once() -> float:
        qid_hint = secrets.token_hex(6)
        created = api.ask(callback_url=f"{receiver.server.url}/hook/{qid_hint}")
        body = _click(stack, clicks, created)
        t0 = time.time()
        if sp.post(body) != 200:
            raise RuntimeError("parley serve refused a Submit click")
        return (receiver.wait(qid_hint) - t0) * 1000

    try:
        for _ in range(3):
            poll_once()
            hook_once()
            _bare_resume(stack, sb, clicks)
        polls, hooks, base = Dist(), Dist(), Dist()
        for rnd in range(cfg.rounds):
            sides = [(poll_once, polls), (hook_once, hooks), (lambda: _bare_resume(stack, sb, clicks), base)]
            for fn, dist in sides if rnd % 2 == 0 else sides[::-1]:
                dist.add_round([fn() for _ in range(per_round)])
    finally:
        sp.close()
        sb.close()
        receiver.server.stop()
        stack.stop(procs)
    rows = []
    for name, dist in (("12 submit → long-poll", polls), ("12 submit → webhook", hooks)):
        rows += [
            Row(
                name,
                "simple",
                "p50 ms",
                dist.p50,
                base.p50,
                ratio(dist.p50, base.p50),
                spread=f"{dist.spread()} | {base.spread()}",
            ),
            Row(name, "simple", "p99 ms", dist.p99, base.p99, ratio(dist.p99, base.p99)),
        ]
    return rows


class OpenPolls:
    """`n` long-polls held open on `parley serve` from one asyncio thread, each re-opened when it returns."""

    def __init__(self, api: Api, ids: list[str], server_pgid: int | None = None) -> None:
        self.api, self.ids, self.server_pgid = api, ids, server_pgid
        self.stop = threading.Event()
        self.opened = 0
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        limits = httpx.Limits(max_connections=len(self.ids) + 10, max_keepalive_connections=len(self.ids) + 10)
        async with httpx.AsyncClient(
            base_url=self.api.http.base_url, headers=dict(self.api.http.headers), timeout=90, limits=limits
        ) as client:

            async def hold(qid: str) -> None:
                while not self.stop.is_set():
                    self.opened += 1
                    await client.get(f"/api/v1/questions/{qid}", params={"wait": 60})

            tasks = [asyncio.create_task(hold(q)) for q in self.ids]
            while not self.stop.is_set():
                await asyncio.sleep(0.1)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self) -> OpenPolls:
        self.thread.start()
        deadline = time.monotonic() + 30
        while self.opened < len(self.ids) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(2.0)  # every request is sent; let the server finish opening them (auth, reads) before timing
        if self.server_pgid is not None:
            settle(self.server_pgid)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def settle(pgid: int, busy: float = 0.1, window: float = 0.25, most: float = 15.0) -> None:
    """Wait (at most `most` s) until the server uses under `busy` of a core over `window` s.

    Opening 200 long-polls is about a thousand short reads on the server's threads; on a loaded
    machine they can outlast the fixed 2 s above and be timed as the acks' tail.
    """
    deadline = time.monotonic() + most
    before = group_cpu_seconds(pgid)
    while time.monotonic() < deadline:
        time.sleep(window)
        now = group_cpu_seconds(pgid)
        if now - before < busy * window:
            return
        before = now


def _ack_rows(stack: Stack, api: Api, cfg: Config) -> list[Row]:
    waiting = [api.ask()["id"] for _ in range(OPEN_POLLS)]
    request = three_item_request()
    per_round = cfg.pick(224, 800)
    total = cfg.rounds * 2 * per_round + 64
    runs = seed_paused(
        RunStore(stack.client),
        total,
        request,
        agent=AGENT,
        user_for=lambda i: f"U0B{i % 100:03d}",
        messages=stack.seed_messages(total),
    )
    clicks = SubmitClicks(request)
    bodies = iter([clicks.body(r) for r in runs])

    def take(n: int) -> list[bytes]:
        return [next(bodies) for _ in range(n)]

    load(stack.serve_port, take(64), 8)
    with_polls, without = Dist(), Dist()
    errors = 0
    for rnd in range(cfg.rounds):
        for side in ("open", "none") if rnd % 2 == 0 else ("none", "open"):
            if side == "open":
                with OpenPolls(api, waiting, stack.serve_pgid):
                    lat, _, bad = load(stack.serve_port, take(per_round), 16)
                with_polls.add_round(lat)
            else:
                lat, _, bad = load(stack.serve_port, take(per_round), 16)
                without.add_round(lat)
            errors += bad
            time.sleep(0.3)
    r99 = ratio(with_polls.p99, without.p99)
    note = f"{errors} HTTP errors" if errors else ""
    return [
        Row(
            "12 ack, 200 long-polls open",
            "c=16",
            "p50 ms",
            with_polls.p50,
            without.p50,
            ratio(with_polls.p50, without.p50),
            spread=f"{with_polls.spread()} | {without.spread()}",
            note=note,
        ),
        Row(
            "12 ack, 200 long-polls open",
            "c=16",
            "p99 ms",
            with_polls.p99,
            without.p99,
            r99,
            f"<= {ACK_TARGET}x",
            r99 is not None and r99 <= ACK_TARGET,
        ),
    ]


def measure(stack: Stack, cfg: Config) -> Result:
    flush(stack.client)
    token = tokens.create(
        QuestionStore(stack.client), f"bench-{secrets.token_hex(3)}", ["ask"], rate_limit=10**9, open_questions=10**9
    )
    api = Api(stack.serve_port, token.token)
    rows = _ask_rows(stack, api, cfg)
    rows += _resume_rows(stack, api, cfg)
    rows += _ack_rows(stack, api, cfg)
    api.http.close()
    return Result(rows=rows, detail={"open_polls": OPEN_POLLS})
