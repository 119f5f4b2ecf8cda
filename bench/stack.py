"""The processes under test, started like production and stopped by their own ids.

- the Web API stand-in (`bench.standin`),
- `parley serve` (the real CLI: uvicorn, bolt on a pool of 32 threads, the API async),
- the bare bolt app on the same stack (`bench.bare`),
- `parley worker` processes (the real CLI) and raw RQ workers (`bench.rawworker`).

Every child gets the same environment: the bench's Redis database, a bot token,
a fresh signing secret and the stand-in's URL (with `slack_tls`, its HTTPS port, the
certificate trusted through `SSL_CERT_FILE`). Parley logs at its default level
(INFO), so its own logging is part of what is measured.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import redis
from rq import Worker

from bench.processes import ROOT, Proc, free_port, http_ok, python_argv, wait_until
from bench.slack_signing import BOT_TOKEN, SIGNING_SECRET
from bench.tls import localhost_certificate

EVENTS = "/slack/events"


class Stack:
    """Starts and tracks child processes; `close()` stops every one it started."""

    def __init__(
        self,
        redis_url: str,
        client: redis.Redis,
        parley_tree: Path | None = None,
        *,
        slack_tls: bool = False,
        without_agents: bool = False,
    ) -> None:
        """`parley_tree`: run Parley's own processes (`parley serve`, `parley worker`) from that
        checkout, against this one's baselines, load and stand-in: an old commit measured
        against the same denominator as this one. `slack_tls`: every process reaches the
        Web API over HTTPS, as it reaches Slack (the bench's own routes stay on HTTP).
        `without_agents`: the stand-in's workspace lacks Slack's agent surfaces."""
        self.redis_url = redis_url
        self.parley_tree = parley_tree
        self.client = client
        self.tmp = Path(tempfile.mkdtemp(prefix="parley-bench-"))
        self.procs: list[Proc] = []
        self.standin_port = 0
        self.standin_tls_port = 0
        self.slack_tls = slack_tls
        self.without_agents = without_agents
        self.certificate: Path | None = None  # the stand-in's, with `slack_tls`, once the servers start
        self.serve_port = 0
        self.serve_pgid: int | None = None  # `parley serve`'s process group (its own session)
        self.bare_port = 0
        self._n = 0
        self.keep_logs = False

    # ---- environment -----------------------------------------------------------------------
    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PARLEY_", "SLACK_"))}
        env.update(
            {
                "REDIS_URL": self.redis_url,
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                "SLACK_API_URL": f"{self.api_url}/api/",
                "PARLEY_AGENTS": "bench.agents",
                "PARLEY_DATA_DIR": str(self.tmp / "data"),
                "PARLEY_WEBHOOK_ALLOW": "127.0.0.1:*",  # the webhook row's receiver is on loopback, any port
                "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
            }
        )
        if self.certificate is not None:
            env["SSL_CERT_FILE"] = str(self.certificate)
        env.update(extra)
        return env

    @property
    def standin_url(self) -> str:
        """The stand-in's plain HTTP port: the bench's own routes (seed, calls, ping)."""
        return f"http://127.0.0.1:{self.standin_port}"

    @property
    def api_url(self) -> str:
        """Where Parley and the baselines reach the Web API."""
        return f"https://localhost:{self.standin_tls_port}" if self.slack_tls else self.standin_url

    def start_process(self, name: str, argv: list[str], **env: str) -> Proc:
        """Any child process, tracked like the others (stopped by `stop` or `close`)."""
        return self._start(name, argv, **env)

    def _start(self, name: str, argv: list[str], **env: str) -> Proc:
        self._n += 1
        cwd = ROOT
        if self.parley_tree is not None and name.startswith("parley-"):
            # `python -m` puts its working directory first on sys.path, ahead of PYTHONPATH: run
            # from the tree, or this checkout's code would be imported instead of the tree's.
            cwd = self.parley_tree.resolve()
            env = {"PYTHONPATH": os.pathsep.join((str(cwd), str(ROOT))), **env}
        proc = Proc(f"{self._n:02d}-{name}", argv, self.env(**env), self.tmp, cwd)
        self.procs.append(proc)
        return proc

    # ---- servers ---------------------------------------------------------------------------
    def start_servers(self) -> None:
        """The stand-in first (the bots call it), then `parley serve` and the bare app side by side."""
        self.standin_port = free_port()
        tls: list[str] = []
        if self.slack_tls:
            self.certificate, key = localhost_certificate(self.tmp)
            self.standin_tls_port = free_port()
            tls = [str(self.standin_tls_port), str(self.certificate), str(key)]
        lacking = ["--without-agents"] if self.without_agents else []
        standin = self._start("standin", python_argv("-m", "bench.standin", str(self.standin_port), *tls, *lacking))
        wait_until(lambda: http_ok(f"{self.standin_url}/bench/ping"), 20, "the Web API stand-in", standin)
        self.serve_port, self.bare_port = free_port(), free_port()
        serve = self._start("parley-serve", python_argv("-m", "parley.cli", "serve", "--port", str(self.serve_port)))
        self.serve_pgid = serve.pid
        bare = self._start("bare-bolt", python_argv("-m", "bench.bare", str(self.bare_port)))
        wait_until(lambda: http_ok(f"http://127.0.0.1:{self.serve_port}/healthz"), 30, "parley serve", serve)
        wait_until(lambda: http_ok(f"http://127.0.0.1:{self.bare_port}/healthz"), 30, "the bare app", bare)

    def seed_messages(self, n: int) -> list[list[str]]:
        """(channel, root ts, question ts) of `n` threads posted in the stand-in."""
        out: list[list[str]] = []
        while len(out) < n:
            k = min(5000, n - len(out))
            req = urllib.request.Request(f"{self.standin_url}/bench/seed?n={k}", method="POST")
            with urllib.request.urlopen(req, timeout=60) as resp:
                out += json.loads(resp.read())
        return out

    def calls(self, method: str, since: float) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.standin_url}/bench/calls?method={method}&since={since}") as r:
            return list(json.loads(r.read()))

    # ---- workers ---------------------------------------------------------------------------
    def parley_workers(self, n: int, worker_class: str = "simple") -> list[Proc]:
        """`n` real `parley worker` processes (or, for "pool", one WorkerPool of `n` simple workers)."""
        if worker_class.startswith("pool"):
            procs = [
                self._start(
                    "parley-pool",
                    python_argv("-m", "bench.rawworker", "--parley", "--class", worker_class, "--num", str(n)),
                )
            ]
        else:
            procs = [
                self._start(
                    f"parley-worker-{worker_class}",
                    python_argv("-m", "parley.cli", "worker", "--worker-class", worker_class),
                )
                for _ in range(n)
            ]
        self._wait_workers("parley", n, procs)
        return procs

    def raw_workers(self, queue: str, n: int, worker_class: str = "simple") -> list[Proc]:
        """`n` raw RQ workers on `queue` running `bench.jobs` (or one WorkerPool of `n`)."""
        if worker_class.startswith("pool"):
            procs = [
                self._start(
                    "raw-pool",
                    python_argv("-m", "bench.rawworker", "--queue", queue, "--class", worker_class, "--num", str(n)),
                )
            ]
        else:
            procs = [
                self._start(
                    f"raw-worker-{worker_class}",
                    python_argv("-m", "bench.rawworker", "--queue", queue, "--class", worker_class),
                )
                for _ in range(n)
            ]
        self._wait_workers(queue, n, procs)
        return procs

    def _wait_workers(self, queue: str, n: int, procs: list[Proc]) -> None:
        from rq import Queue

        q = Queue(queue, connection=self.client)

        def ready() -> bool:
            for p in procs:
                if not p.alive():
                    raise RuntimeError(f"{p.name} exited:\n{p.tail()}")
            return Worker.count(queue=q) >= n

        wait_until(ready, 30, f"{n} worker(s) on {queue}")
        time.sleep(0.2)  # let each worker reach its blocking dequeue

    def stop(self, procs: list[Proc]) -> None:
        for p in procs:
            p.stop()
            if p in self.procs:
                self.procs.remove(p)

    def close(self) -> None:
        """Stop every child still running; keep the logs only when asked to (a measurement failed)."""
        for p in reversed(self.procs):
            p.stop()
        self.procs.clear()
        if self.keep_logs:
            print(f"bench: child process logs kept in {self.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class Poster:
    """POSTs signed bodies over one keep-alive connection, reconnecting when the server closed it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn: http.client.HTTPConnection | None = None

    def post(self, body: bytes) -> int:
        from bench.slack_signing import signed_headers

        headers = signed_headers(body)
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                self.conn.request("POST", EVENTS, body=body, headers=headers)
                resp = self.conn.getresponse()
                resp.read()
                return resp.status
            except (http.client.HTTPException, ConnectionError, BrokenPipeError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
