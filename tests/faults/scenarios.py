"""Fault scenarios: each drives the live stack through one kind of trouble, then the invariants are checked.

A scenario gets a `Ctx` (the stack, a seeded `random.Random`, the ledger) and registers the
runs it starts; the runner (`run_scenario`) checks every invariant on them afterwards. Random
choices come only from `ctx.rng`, so a failing scenario is replayed with the seed printed.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
from slack_forms import button_action, home_row_button, is_question
from slack_payloads import ADMIN, home_actions_payload
from slack_stack import RunRef

from bot.slack.question_metadata import QUESTION_EVENT
from faults.agents import CRASH_POINTS, marker_path
from faults.conftest import FaultStack, Ledger
from faults.invariants import Checker, Expect, unchanged
from workers.interaction import Answer
from workers.store.question_closes import Closed
from workers.store.runs import RunStore

ACK_DEADLINE = 3.0
COLOURS = ("Red", "Green", "Blue")


@dataclass
class Ctx:
    stack: FaultStack
    rng: random.Random
    ledger: Ledger
    runs: list[RunRef] = field(default_factory=list)
    expects: dict[str, Expect] = field(default_factory=dict)

    @property
    def checker(self) -> Checker:
        return Checker(self.stack, self.ledger)

    # ---- runs ----------------------------------------------------------------------------
    def start(self, user: str = "U0BOB", **params: Any) -> RunRef:
        """`/parley f-flow {params} <tag>` as `user`; the run joins the ones checked afterwards."""
        run = self.stack.start_run("f-flow", json.dumps(params) + f" fault-{secrets.token_hex(4)}", user=user)
        self.runs.append(run)
        return run

    def question(self, run: RunRef, n: int = 1, timeout: float = 30.0) -> dict[str, Any]:
        return self.stack.question(run, n, timeout=timeout)

    def interrupt_id(self, run: RunRef) -> str:
        assert self.stack.redis is not None
        return self.stack.redis.hget(f"parley:run:{run.run_id}", "interrupt").decode()

    def payload(self, run: RunRef, q: dict[str, Any], colour: str, note: str | None = None, **kw: Any) -> dict:
        fills: dict[str, Any] = {"Colour": colour}
        if note is not None:
            fills["Note"] = note
        return self.stack.submit_payload(run, q, fills, **kw)

    def post(self, payload: dict[str, Any]) -> httpx.Response:
        """Send an interaction; Slack needs the ack within three seconds, whatever is failing."""
        resp = self.stack.interact(payload)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        assert resp.elapsed.total_seconds() < ACK_DEADLINE, resp.elapsed
        return resp

    def answer(self, run: RunRef, q: dict[str, Any] | None = None, colour: str | None = None, **kw: Any) -> str:
        q = q or self.question(run)
        colour = colour or self.rng.choice(COLOURS)
        self.post(self.payload(run, q, colour, **kw))
        return colour

    def wait_status(self, run: RunRef, *statuses: str, timeout: float = 30.0) -> str:
        return self.stack.wait_status(run, *statuses, timeout=timeout)

    def result(self, run: RunRef) -> str:
        assert self.stack.redis is not None
        raw = self.stack.redis.hget(f"parley:run:{run.run_id}", "result")
        return raw.decode() if raw else ""

    # ---- faults --------------------------------------------------------------------------
    def kill_at(self, run: RunRef, point: str, timeout: float = 30.0) -> None:
        """Wait for the run's execution to hang at crash point `point`, SIGKILL its worker, start another."""
        marker = marker_path(self.stack.data_dir, run.run_id, point)
        self.stack.wait_for(f"run {run.run_id} to reach {point}", marker.exists, timeout)
        role = self.stack.kill_pid(int(marker.read_text()))
        assert role == "worker", role
        self.ledger.fault(f"worker SIGKILL {point}")
        self.stack.start_worker()

    def open_gate(self, name: str) -> None:
        gates = self.stack.data_dir / "gates"
        gates.mkdir(exist_ok=True)
        (gates / name).touch()


Scenario = Callable[[Ctx], None]
REGISTRY: dict[str, Scenario] = {}
GLOBAL: set[str] = set()  # scenarios that take down shared parts (Redis, the bot)


def scenario(name: str, *, global_: bool = False) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        REGISTRY[name] = fn
        if global_:
            GLOBAL.add(name)
        return fn

    return register


def run_scenario(name: str, stack: FaultStack, ledger: Ledger, rng: random.Random) -> Ctx:
    """Run one scenario, then check every invariant on the runs it started."""
    stack.ensure()
    ctx = Ctx(stack, rng, ledger)
    REGISTRY[name](ctx)
    ctx.checker.check(ctx.runs, ctx.expects)
    died = stack.unexpected_exits()
    assert not died, f"Parley processes exited on their own during {name}: {died}\n{stack.logs()}"
    ledger.scenarios[name] += 1
    return ctx


# ---- workers SIGKILLed at points of a run ------------------------------------------------------
def _worker_killed(point: str) -> Scenario:
    def run(ctx: Ctx) -> None:
        r = ctx.start(crash=[point], work=round(ctx.rng.uniform(0, 0.3), 2))
        if point in ("before_claim", "before_ask", "after_post"):
            ctx.kill_at(r, point)
            colour = ctx.answer(r)
        else:
            colour = ctx.answer(r)
            ctx.kill_at(r, point)
        ctx.wait_status(r, "succeeded")
        assert ctx.result(r).startswith(f"colour {colour},")
        if point == "after_effect":
            # Documented: the effect happened, the worker died before recording it; the replay repeats it.
            ctx.expects[r.run_id] = Expect(repeated_steps=frozenset({"apply"}))

    return run


for _point in CRASH_POINTS:
    scenario(f"worker killed {_point}")(_worker_killed(_point))


@scenario("worker killed at a random point")
def worker_killed_at_random(ctx: Ctx) -> None:
    """One of the crash points, chosen by the seed, in a run that may say something after the answer."""
    point = ctx.rng.choice([p for p in CRASH_POINTS if p != "after_effect"])
    _worker_killed(point)(ctx)


# ---- the bot dies between the atomic acceptance and the enqueue ----------------------------------
@scenario("accepted but never enqueued")
def accepted_without_enqueue(ctx: Ctx) -> None:
    """The store's close() alone, as a bot killed right after it would leave it: the sweep enqueues the resume."""
    r = ctx.start()
    ctx.question(r)
    assert ctx.stack.redis is not None
    store = RunStore(ctx.stack.redis)
    interrupt = store.interrupt(ctx.interrupt_id(r))
    assert interrupt is not None
    answers = interrupt.request.validate_answers([Answer(id="colour", choice="Green")])
    assert store.close(interrupt, "answer", "U0BOB", answers, token="bot-died") == Closed()  # accepted, new
    ctx.ledger.fault("bot killed between acceptance and enqueue")
    ctx.wait_status(r, "succeeded", timeout=20)
    assert ctx.result(r) == "colour Green, note -"
    # Nobody locked the question (the bot that would have is gone): the one invariant it may miss.
    ctx.expects[r.run_id] = Expect(unlocked_ok=True)


@scenario("bot SIGKILLed right after a submit", global_=True)
def bot_killed_after_submit(ctx: Ctx) -> None:
    r = ctx.start()
    colour = ctx.answer(r)
    ctx.stack.kill_bot()
    ctx.ledger.fault("bot SIGKILL after submit")
    ctx.wait_status(r, "succeeded")
    assert ctx.result(r).startswith(f"colour {colour},")
    ctx.stack.start_bot()
    ctx.expects[r.run_id] = Expect(unlocked_ok=True)


# ---- Redis restarted ------------------------------------------------------------------------------
@scenario("redis restarted with runs paused, queued and running", global_=True)
def redis_restarted(ctx: Ctx) -> None:
    stack = ctx.stack
    paused = ctx.start()
    to_queue = ctx.start()
    q_paused, q_queue = ctx.question(paused), ctx.question(to_queue)
    # Keep both workers busy in a slow first step, so what is answered now waits in the queue.
    busy = [ctx.start(work=3.0) for _ in range(2)]
    for b in busy:
        ctx.wait_status(b, "running")
    ctx.answer(to_queue, q_queue, colour="Blue")
    fresh = ctx.start()
    assert stack.status(to_queue.run_id) == "queued" and stack.status(fresh.run_id) == "queued"

    stack.server.shutdown()
    time.sleep(ctx.rng.uniform(0, 0.4))
    stack.server.start()
    ctx.ledger.fault("redis SHUTDOWN and restart (AOF)")

    ctx.answer(paused, q_paused, colour="Red")  # the bot reconnects
    ctx.answer(fresh)  # the workers reconnect, run it and ask its question
    for run in (paused, to_queue, fresh, *busy):
        if run in busy:
            ctx.answer(run)
        ctx.wait_status(run, "succeeded", timeout=40)
    assert ctx.result(paused).startswith("colour Red,") and ctx.result(to_queue).startswith("colour Blue,")


# ---- Redis unreachable while an answer arrives -------------------------------------------------
@scenario("redis unreachable while an answer arrives", global_=True)
def redis_down_answer(ctx: Ctx) -> None:
    stack = ctx.stack
    assert stack.redis is not None
    r = ctx.start()
    q = ctx.question(r)
    stack.settle(quiet=0.3)
    mark = stack.mark()
    with unchanged(stack.redis, [r.run_id], "an answer sent while Redis was down", logical=True):
        stack.server.shutdown()
        ctx.ledger.fault("redis down during an answer")
        try:
            ctx.post(ctx.payload(r, q, "Green"))
            note = stack.wait_ephemeral("U0BOB", lambda t: "submit again" in t, since=mark)
            assert note["args"]["channel"] == r.channel
        finally:
            stack.server.start()
    assert stack.calls("chat.update", since=mark) == []
    assert is_question(stack.message(r, q["ts"]))  # the controls are still there
    ctx.answer(r, q, colour="Blue")
    ctx.wait_status(r, "succeeded", timeout=40)
    assert ctx.result(r).startswith("colour Blue,")


# ---- the Web API failing while Parley posts and updates -------------------------------------------
SLACK_FAULTS: list[tuple[str, str, dict[str, Any]]] = [
    ("question post rate limited", "chat.postMessage", {"status": 429, "retry_after": 1}),
    ("question post rate limited twice", "chat.postMessage", {"status": 429, "retry_after": 1, "times": 2}),
    ("question post 500", "chat.postMessage", {"status": 500}),
    ("question post slow", "chat.postMessage", {"delay": 2.0}),
    ("lock rate limited", "chat.update", {"status": 429, "retry_after": 1}),
    ("lock 500", "chat.update", {"status": 500}),
    ("lock slow", "chat.update", {"delay": 2.0}),
    ("final answer 500", "chat.postMessage@final", {"status": 500}),
    ("final answer rate limited", "chat.postMessage@final", {"status": 429, "retry_after": 1}),
]


def _inject(ctx: Ctx, method: str, fault: dict[str, Any]) -> None:
    fault = dict(fault)
    if "delay" in fault:
        ctx.stack.ws.faults.delay_next(method, fault["delay"], times=fault.get("times", 1))
    else:
        ctx.stack.ws.faults.fail_next(method, **fault)


def _slack_fault(label: str, method: str, fault: dict[str, Any]) -> Scenario:
    def run(ctx: Ctx) -> None:
        gate = secrets.token_hex(4)
        r = ctx.start(gate=gate)
        ctx.wait_status(r, "running")
        ctx.stack.settle(quiet=0.3)
        if method == "chat.postMessage":
            _inject(ctx, method, fault)  # the next post is the question
        ctx.open_gate(gate)
        q = ctx.question(r)
        if method == "chat.update":
            ctx.stack.settle(quiet=0.3)
            _inject(ctx, method, fault)  # the next update locks the answered question
        if method == "chat.postMessage@final":
            ctx.stack.settle(quiet=0.3)
            _inject(ctx, "chat.postMessage", fault)  # the next post is the final answer
            ctx.stack.ws.faults.delay_next("chat.update", 1.0)  # the lock comes after it
        colour = ctx.answer(r, q)
        ctx.ledger.fault(f"web api: {label}")
        ctx.wait_status(r, "succeeded", timeout=40)
        assert ctx.result(r).startswith(f"colour {colour},")

    return run


for _label, _method, _fault in SLACK_FAULTS:
    scenario(f"slack {_label}")(_slack_fault(_label, _method, _fault))


@scenario("worker killed inside the question's post")
def killed_inside_question_post(ctx: Ctx) -> None:
    """Slack posts the question but the worker dies before learning its `ts`: the replay finds the
    message by its metadata in the thread and reuses it, so the question is posted once."""
    stack = ctx.stack
    gate = secrets.token_hex(4)
    r = ctx.start(gate=gate)
    ctx.wait_status(r, "running")
    # The gate step's plan is posted in the thread first: the hold must fall on the question's post.
    stack.wait_for("the run's plan", lambda: any(m["text"].startswith("Plan of") for m in stack.thread(r)))
    stack.settle(quiet=0.3)
    stack.ws.faults.hold_next("chat.postMessage", 30.0)  # the next post is the question: served, reply held
    ctx.open_gate(gate)
    stack.wait_for("the question to reach Slack", lambda: any(is_question(m) for m in stack.thread(r)), 20)
    for worker in stack.live("worker"):  # the worker inside the call, and any other: the machine died
        stack.sigkill(worker)
    ctx.ledger.fault("worker SIGKILL inside chat.postMessage")
    stack.start_worker()
    stack.start_worker()
    colour = ctx.answer(r)  # the replay parks on the message Slack already has
    ctx.wait_status(r, "succeeded", timeout=40)
    assert ctx.result(r).startswith(f"colour {colour},")
    # Count the messages that carry a question's metadata, open or answered. An edited message is
    # not one: the run's live plan is edited too.
    asked = [m for m in stack.thread(r) if (m.get("metadata") or {}).get("event_type") == QUESTION_EVENT]
    assert len(asked) == 1, [m.get("text") for m in asked]


@scenario("slack lock timed out")
def slack_lock_timeout(ctx: Ctx) -> None:
    """chat.update slower than the client's timeout: the client gives up, the call still lands."""
    r = ctx.start()
    q = ctx.question(r)
    ctx.stack.settle(quiet=0.3)
    ctx.stack.ws.faults.delay_next("chat.update", 11.0)
    ctx.answer(r, q)
    ctx.ledger.fault("web api: lock timed out")
    ctx.wait_status(r, "succeeded", timeout=40)


# ---- duplicates and races --------------------------------------------------------------------------
@scenario("duplicate deliveries of one submit")
def duplicate_deliveries(ctx: Ctx) -> None:
    stack = ctx.stack
    r = ctx.start()
    q = ctx.question(r)
    payload = ctx.payload(r, q, "Green", note="once")
    mark = stack.mark()
    copies = ctx.rng.randint(2, 4)
    with ThreadPoolExecutor(copies) as pool:
        list(pool.map(lambda _: ctx.post(payload), range(copies)))
    ctx.ledger.fault("duplicate delivery", copies - 1)
    ctx.wait_status(r, "succeeded")
    ctx.post(payload)  # and once more, after the run finished
    ctx.ledger.fault("duplicate delivery")
    stack.settle(quiet=0.5)
    assert stack.calls("chat.postEphemeral", since=mark) == []  # the same click is never "already answered"
    assert ctx.result(r) == "colour Green, note once"


@scenario("concurrent clicks by several users")
def concurrent_clicks(ctx: Ctx) -> None:
    stack = ctx.stack
    people = ["U0BOB", "U0CAROL", "U0ALICE"]
    r = ctx.start(assignees=people)
    q = ctx.question(r)
    picks = {u: ctx.rng.choice(COLOURS) for u in people}
    payloads = [ctx.payload(r, q, c, user=u) for u, c in picks.items()]
    ctx.rng.shuffle(payloads)
    mark = stack.mark()
    with ThreadPoolExecutor(len(payloads)) as pool:
        list(pool.map(ctx.post, payloads))
    ctx.ledger.fault("concurrent clicks", len(payloads) - 1)
    ctx.wait_status(r, "succeeded")
    assert stack.redis is not None
    winner = stack.redis.hget(f"parley:interrupt:{ctx.interrupt_id(r)}", "answered_by").decode()
    assert ctx.result(r).startswith(f"colour {picks[winner]},")
    for loser in (u for u in people if u != winner):
        stack.wait_ephemeral(loser, lambda t: "already answered" in t, since=mark)


def _admin_cancel_payload(ctx: Ctx, run: RunRef) -> dict[str, Any]:
    home = ctx.stack.open_home(ADMIN)
    block, cancel = home_row_button(home, run.run_id, "parley_admin_cancel")
    return home_actions_payload(user=ADMIN, view=home, action=button_action(block, cancel))


@scenario("admin cancel racing an answer")
def cancel_races_answer(ctx: Ctx) -> None:
    r = ctx.start()
    q = ctx.question(r)
    cancel = _admin_cancel_payload(ctx, r)
    answer = ctx.payload(r, q, "Red")
    first = [cancel, answer]
    ctx.rng.shuffle(first)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(ctx.post, first))
    ctx.ledger.fault("cancel racing an answer")
    status = ctx.wait_status(r, "cancelled", "succeeded")
    assert ctx.stack.redis is not None
    state = ctx.stack.redis.hget(f"parley:interrupt:{ctx.interrupt_id(r)}", "state").decode()
    assert (status, state) in {("cancelled", "cancelled"), ("cancelled", "answered"), ("succeeded", "answered")}


@scenario("an answer racing expiry")
def answer_races_expiry(ctx: Ctx) -> None:
    stack = ctx.stack
    assert stack.redis is not None
    r = ctx.start(expires_in=3)
    q = ctx.question(r)
    expires_at = float(stack.redis.hget(f"parley:interrupt:{ctx.interrupt_id(r)}", "expires_at"))
    payload = ctx.payload(r, q, "Blue")
    time.sleep(max(0.0, expires_at + ctx.rng.uniform(-0.4, 0.4) - time.time()))
    ctx.post(payload)
    ctx.ledger.fault("answer racing expiry")
    status = ctx.wait_status(r, "succeeded", "expired")
    q_state = stack.redis.hget(f"parley:interrupt:{ctx.interrupt_id(r)}", "state").decode()
    assert (status, q_state) in {("succeeded", "answered"), ("expired", "expired")}
    if q_state == "answered":
        answered_at = float(stack.redis.hget(f"parley:interrupt:{ctx.interrupt_id(r)}", "answered_at"))
        assert answered_at < expires_at


MIXABLE = [name for name in REGISTRY if name not in {"slack lock timed out"}]
