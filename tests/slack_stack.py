"""A live Parley around the Slack Web API stand-in, for end-to-end tests.

`SlackStack` runs the real product: the stand-in in this process (so tests read its call
log), a `parley serve` subprocess (HTTP or Socket Mode) and one or more `parley worker`
subprocesses, all on the test Redis database. Every process it starts runs in a process
group of its own and is stopped by its own id.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from parallel import xdist_worker
from slack_forms import button_action, find_element, form_state, is_question, past_posting
from slack_payloads import (
    ADMIN,
    APP_TOKEN,
    BOT_TOKEN,
    EVENTS_PATH,
    FORM,
    JSON_TYPE,
    PERMALINK_BASE,
    SIGNING_SECRET,
    TEAM_ID,
    app_home_opened_event,
    block_actions_payload,
    event_callback_body,
    interaction_body,
    mrkdwn_escape,
    signed_headers,
    slash_command_body,
)

from bot.playground import LoopbackServer, Workspace, make_webapi_app
from workers.store.connection import connect
from workers.store.runs import RunStore

TESTS = Path(__file__).resolve().parent
PARLEY = Path(sys.executable).with_name("parley")


# ---- Redis -------------------------------------------------------------------------------
def snapshot(client: redis.Redis) -> dict[bytes, bytes | None]:
    """DUMP of every `parley:*` key: equal snapshots mean nothing Parley stores changed."""
    return {key: client.dump(key) for key in sorted(client.scan_iter(match="parley:*", count=1000))}


# ---- processes ---------------------------------------------------------------------------
SERVER_PORTS = range(28000, 32500)
"""The ports the tests' servers listen on, all below Linux's ephemeral range (32768 up).

A port the kernel hands out for port 0 is an ephemeral one. A process started on it binds it a
second or two later. Meanwhile any test's outgoing connection may take it as its source port.
Each xdist worker draws from its own slice of 500, so two workers never pick the same port.
"""
_SLICE = 500
_rounds: dict[int, list[int]] = {}  # by the slice's first port: the ports of this round not yet handed out


def free_port() -> int:
    """A loopback TCP port nobody listens on now, from this process's slice of `SERVER_PORTS`.

    Ports come in a shuffled round, so a process is never handed one port twice in a row.
    """
    worker = xdist_worker()
    slices = len(SERVER_PORTS) // _SLICE
    first = SERVER_PORTS.start + _SLICE * ((slices - 1) if worker is None else worker % (slices - 1))
    pending = _rounds.setdefault(first, [])
    for _ in range(2 * _SLICE):
        if not pending:
            pending.extend(random.sample(range(first, first + _SLICE), _SLICE))
        port = pending.pop()
        if can_listen(port):
            return port
    raise RuntimeError(f"no free port in {first}-{first + _SLICE - 1}")


def can_listen(port: int) -> bool:
    """Whether a server could listen on ``port`` now (SO_REUSEADDR, as servers bind: TIME_WAIT is not held)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
    return True


def stop_process_group(proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """Stop the process group `proc` leads (started with `start_new_session`): SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.wait(timeout=timeout)


@dataclass
class RunRef:
    """A run started from Slack: its id and the thread it talks in."""

    run_id: str
    channel: str
    root_ts: str
    started_by: str


@dataclass
class SlackStack:
    """The stand-in, a real `parley serve` and real `parley worker`s on the test Redis."""

    redis_url: str
    data_dir: Path
    workers: int = 2
    socket_mode: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    ws: Workspace = field(default_factory=Workspace)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    port: int = 0
    api: LoopbackServer | None = None
    http: httpx.Client | None = None
    redis: redis.Redis | None = None

    # ---- lifecycle ---------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        assert self.api is not None
        return self.api.url + "/api/"

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "PARLEY_")) and k != "REDIS_URL"}
        pythonpath = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
        env = {
            **base,
            "REDIS_URL": self.redis_url,
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": self.api_url,
            "PARLEY_ADMINS": ADMIN,
            "PARLEY_DATA_DIR": str(self.data_dir),
            "PARLEY_SWEEP_INTERVAL": "0.5",
            "PARLEY_AGENTS": "slack_agents",
            "PARLEY_LOG_LEVEL": "INFO",
            # One test user starts many runs here; the start limits have tests of their own (test_start_limits.py).
            "PARLEY_STARTS_PER_USER": "off",
            "PARLEY_STARTS_PER_CHANNEL": "off",
            "PARLEY_OPEN_RUNS_PER_USER": "0",
            "PYTHONPATH": pythonpath,
        }
        if self.socket_mode:
            env["SLACK_APP_TOKEN"] = APP_TOKEN
        env.update(self.extra_env)
        return env

    def _spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with (self.data_dir / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                [str(PARLEY), *args],
                env={**self.env(), **(env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def start(self) -> SlackStack:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.redis = connect(self.redis_url)  # any REDIS_URL form, a Sentinel's included
        self.redis.flushdb()
        self.ws.permalink_base = PERMALINK_BASE
        self.api = LoopbackServer(make_webapi_app(self.ws)).start()
        try:
            if self.socket_mode:
                self._spawn("serve", "serve", "--socket-mode")
            else:
                self.port = free_port()
                self._spawn("serve", "serve", "--host", "127.0.0.1", "--port", str(self.port))
                self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=15)
                self.wait_for("parley serve to answer /healthz", self._healthy, timeout=30)
            for n in range(self.workers):
                self.spawn_worker(f"worker-{n}")
        except BaseException:
            self.stop()
            raise
        return self

    def spawn_worker(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        """One more `parley worker` (logging to `<name>.log`), with extra command-line `args`."""
        return self._spawn(name, "worker", "--name", f"slack-test-{os.getpid()}-{name}-{secrets.token_hex(2)}", *args)

    def spawn_serve(
        self, name: str, port: int, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """One more `parley serve` over HTTP on `port` (logging to `<name>.log`), with extra `args` and `env`."""
        return self._spawn(name, "serve", "--host", "127.0.0.1", "--port", str(port), *args, env=env)

    def _healthy(self) -> bool:
        for proc in self.procs:
            if proc.poll() is not None:
                raise AssertionError(f"parley exited with {proc.returncode}\n{self.logs()}")
        assert self.http is not None
        try:
            return self.http.get("/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        for proc in reversed(self.procs):
            stop_process_group(proc)
        self.procs.clear()
        if self.http is not None:
            self.http.close()
        if self.api is not None:
            self.api.stop()
        if self.redis is not None:
            self.redis.flushdb()
            self.redis.close()

    def logs(self, tail: int = 6000) -> str:
        parts = []
        for path in sorted(self.data_dir.glob("*.log")):
            parts.append(f"--- {path.name} ---\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    @classmethod
    def running(cls, redis_url: str, data_dir: Path, **kwargs: Any) -> Iterator[SlackStack]:
        """A generator for module-scoped fixtures: yields a started stack, always stops it."""
        stack = cls(redis_url, data_dir, **kwargs).start()
        try:
            yield stack
        finally:
            stack.stop()

    # ---- waiting -----------------------------------------------------------------------
    def wait_for(self, what: str, predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
        """Poll `predicate` until it returns something truthy; fail with the processes' logs."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{self.logs()}")
            time.sleep(0.05)

    def mark(self) -> int:
        """A position in the stand-in's call log; pass it as `since` to see only later calls."""
        return len(self.ws.calls())

    def calls(
        self, method: str | None = None, pred: Callable[[dict[str, Any]], bool] | None = None, since: int = 0
    ) -> list[dict[str, Any]]:
        return [
            c
            for c in self.ws.calls()[since:]
            if (method is None or c["method"] == method) and (pred is None or pred(c))
        ]

    def wait_call(
        self,
        method: str,
        pred: Callable[[dict[str, Any]], bool] = lambda c: True,
        *,
        since: int = 0,
        timeout: float = 20.0,
        what: str = "",
    ) -> dict[str, Any]:
        """The first `method` call (after `since`) matching `pred`, waiting for it to happen."""
        found = self.wait_for(what or f"a {method} call", lambda: self.calls(method, pred, since), timeout)
        return found[0]

    def wait_ephemeral(self, user: str, pred: Callable[[str], bool], *, since: int = 0) -> dict[str, Any]:
        return self.wait_call(
            "chat.postEphemeral",
            lambda c: c["args"].get("user") == user and c["status"] == 200 and pred(str(c["args"].get("text", ""))),
            since=since,
            what=f"an ephemeral message to {user}",
        )

    def settle(self, quiet: float = 0.6, timeout: float = 15.0) -> None:
        """Wait until the stand-in has seen no call for `quiet` seconds (the lazy listeners are done)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = self.ws.events
            time.sleep(quiet)
            if self.ws.events == before:
                return
        raise AssertionError(f"the stand-in never went quiet\n{self.logs()}")

    # ---- sending -----------------------------------------------------------------------
    def send(
        self,
        body: str,
        content_type: str,
        *,
        secret: str = SIGNING_SECRET,
        timestamp: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """POST `body` to the bot's events URL, signed with `secret` (or with `headers` given)."""
        assert self.http is not None, "this stack serves over Socket Mode"
        sent = (
            headers if headers is not None else signed_headers(body, content_type, secret=secret, timestamp=timestamp)
        )
        return self.http.post(EVENTS_PATH, content=body.encode(), headers=sent)

    def command(
        self, text: str, *, user: str = "U0BOB", channel: str = "C0GENERAL", team: str = TEAM_ID
    ) -> httpx.Response:
        return self.send(slash_command_body(text, user=user, channel=channel, team=team), FORM)

    def interact(self, payload: dict[str, Any]) -> httpx.Response:
        assert self.redis is not None
        past_posting(RunStore(self.redis), payload)
        return self.send(interaction_body(payload), FORM)

    def event(self, event: dict[str, Any], *, team: str = TEAM_ID, eid: str | None = None) -> httpx.Response:
        return self.send(event_callback_body(event, team=team, eid=eid), JSON_TYPE)

    def open_home(self, user: str) -> dict[str, Any]:
        """`user` opens the App Home tab; returns the view Parley published for them in answer."""
        mark = self.mark()
        assert self.event(app_home_opened_event(user)).status_code == 200
        self.wait_call("views.publish", lambda c: c["args"].get("user_id") == user, since=mark)
        home = self.ws.home(user)
        assert home is not None
        return home

    # ---- runs, threads and questions ---------------------------------------------------
    def start_run(self, agent: str, text: str, *, user: str = "U0BOB", channel: str = "C0GENERAL") -> RunRef:
        """`/parley <agent> <text>` and the run it started; `text` must be unique to the test."""
        resp = self.command(f"{agent} {text}", user=user, channel=channel)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        assert resp.text == "", resp.text
        return self.run_for(agent, text, user=user, channel=channel)

    def run_for(self, agent: str, text: str, *, user: str, channel: str) -> RunRef:
        def root() -> dict[str, Any] | None:
            return next(
                (
                    m
                    for m in self.ws.messages(channel)
                    if m.get("thread_ts", m["ts"]) == m["ts"]
                    and f"started *{agent}*" in m["text"]
                    and m["text"].startswith(f"<@{user}>")
                    and m["text"].endswith(mrkdwn_escape(text))
                ),
                None,
            )

        message = self.wait_for(f"the root message of {agent} {text!r}", root)
        assert self.redis is not None
        run_id = self.wait_for(
            "the thread to be recorded", lambda: self.redis.get(f"parley:thread:{channel}:{message['ts']}")
        )
        return RunRef(run_id.decode(), channel, message["ts"], user)

    def thread(self, run: RunRef) -> list[dict[str, Any]]:
        return self.ws.thread(run.channel, run.root_ts)[1:]

    def question(self, run: RunRef, n: int = 1, timeout: float = 20.0, *, wait_open: bool = True) -> dict[str, Any]:
        """The n-th question message posted in the run's thread (as stored now).

        With `wait_open`, also wait until the run is parked on it: a question is posted just
        before its run parks, and an answer in between is refused as "not waiting yet".
        """

        def find() -> dict[str, Any] | None:
            asked = [m for m in self.thread(run) if is_question(m) or (m.get("edited") and m.get("blocks"))]
            asked = [m for m in asked if not any(b.get("type") == "plan" for b in m["blocks"])]  # the run's plan
            return asked[n - 1] if len(asked) >= n else None

        message = self.wait_for(f"question {n} of run {run.run_id}", find, timeout)
        if wait_open and is_question(message):
            self.wait_for(
                f"run {run.run_id} to park on question {n}", lambda: self.open_on(run, message["ts"]), timeout
            )
        return message

    def open_on(self, run: RunRef, ts: str) -> bool:
        """True when the run is paused on the question posted at `ts`."""
        assert self.redis is not None
        iid = self.redis.hget(f"parley:run:{run.run_id}", "interrupt")
        if self.status(run.run_id) != "paused" or not iid:
            return False
        state, message = self.redis.hmget(f"parley:interrupt:{iid.decode()}", ["state", "message"])
        return state == b"open" and json.loads(message or b"{}").get("ts") == ts

    def message(self, run: RunRef, ts: str) -> dict[str, Any]:
        found = self.ws.message(run.channel, ts)
        assert found is not None
        return found

    def status(self, run_id: str) -> str:
        assert self.redis is not None
        raw = self.redis.hget(f"parley:run:{run_id}", "status")
        return raw.decode() if raw else ""

    def wait_status(self, run: RunRef, *statuses: str, timeout: float = 20.0) -> str:
        return self.wait_for(
            f"run {run.run_id} to be {'/'.join(statuses)}",
            lambda: s if (s := self.status(run.run_id)) in statuses else "",
            timeout,
        )

    def replies(self, run: RunRef, pred: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        return [m for m in self.thread(run) if pred(m)]

    def wait_reply(
        self, run: RunRef, pred: Callable[[dict[str, Any]], bool], what: str, timeout: float = 20.0
    ) -> dict[str, Any]:
        return self.wait_for(what, lambda: next(iter(self.replies(run, pred)), None), timeout)

    # ---- answering ---------------------------------------------------------------------
    def submit(
        self, run: RunRef, question: dict[str, Any], fills: dict[str, Any], **how: Any
    ) -> tuple[httpx.Response, dict[str, Any]]:
        """Click Submit on `question` after filling it (`how`: as for `submit_payload`); returns reply and payload."""
        payload = self.submit_payload(run, question, fills, **how)
        return self.interact(payload), payload

    def submit_payload(
        self,
        run: RunRef,
        question: dict[str, Any],
        fills: dict[str, Any],
        *,
        user: str | None = None,
        team: str = TEAM_ID,
        omit_untouched: bool = False,
        channel: str | None = None,
    ) -> dict[str, Any]:
        """The click on Submit of `question`, filled by label with `fills`, by `user` (the run's starter by
        default), in `channel` (the run's by default)."""
        blocks = question["blocks"]
        block, button = find_element(blocks, "parley_submit")
        return block_actions_payload(
            user=user or run.started_by,
            message=question,
            channel=channel or run.channel,
            action=button_action(block, button),
            state_values=form_state(blocks, fills, omit_untouched=omit_untouched),
            team=team,
        )
