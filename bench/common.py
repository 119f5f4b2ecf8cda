"""What every measurement shares: the bench's Redis, child processes, signing, statistics, results.

The bench compares Parley with the engines it stands on (bolt, Redis, RQ) side by
side in one run, because absolute times on shared machines mean little. Every
child process (servers, workers, the Web API stand-in) runs in its own process
group, is started on a free port and is always stopped by its own id.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import redis

ROOT = Path(__file__).resolve().parents[1]
BENCH_DB = 14
SIGNING_SECRET = secrets.token_hex(16)
BOT_TOKEN = "xoxb-bench-0000"


# ---- Redis ---------------------------------------------------------------------------------
def bench_redis_url(url: str | None = None, db: int = BENCH_DB) -> str:
    """`REDIS_URL` (or 127.0.0.1:6379) pointed at the bench's own database; never database 0."""
    if db == 0:
        raise SystemExit("bench: refusing to use Redis database 0; the bench flushes its database")
    parts = urlparse(url or os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379")
    if parts.scheme == "unix":
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        query["db"] = str(db)
        return urlunparse(parts._replace(query=urlencode(query)))
    return urlunparse(parts._replace(path=f"/{db}"))


def connect(url: str) -> redis.Redis:
    client = redis.Redis.from_url(url)
    client.ping()
    return client


def flush(client: redis.Redis) -> None:
    """Empty the bench's database (and only it)."""
    db = int(client.connection_pool.connection_kwargs.get("db", 0))
    if db == 0:
        raise RuntimeError("refusing to flush Redis database 0")
    client.flushdb()


# ---- child processes -----------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    """One child process in its own process group, logging to a file; `stop()` ends only that group."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("ab")
        self.popen = subprocess.Popen(
            list(argv), env=env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 8.0) -> None:
        """SIGINT (warm shutdown for RQ, quick shutdown for gunicorn), then SIGKILL the group."""
        if self.alive():
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGKILL, 3.0)):
                try:
                    os.killpg(self.popen.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.popen.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        with contextlib.suppress(ProcessLookupError, PermissionError):  # leftovers: a horse, RQ's scheduler
            os.killpg(self.popen.pid, signal.SIGKILL)
        self._log.close()

    def tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


CLK_TCK = os.sysconf("SC_CLK_TCK")


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU of every live process in a process group (and the children it has reaped)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # pgrp; then utime, stime, cutime, cstime
            total += sum(int(x) for x in fields[11:15])
    return total / CLK_TCK


def wait_until(check: Callable[[], bool], timeout: float, what: str, proc: Proc | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{proc.name} exited while waiting for {what}:\n{proc.tail()}")
        try:
            if check():
                return
        except (OSError, redis.RedisError):
            pass
        time.sleep(0.02)
    raise TimeoutError(f"timed out waiting for {what}" + (f":\n{proc.tail()}" if proc else ""))


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=1) as resp:
        return bool(resp.status == 200)


def python_argv(*args: str) -> list[str]:
    return [sys.executable, *args]


# ---- Slack signing -------------------------------------------------------------------------
def signed_headers(body: bytes, secret: str = SIGNING_SECRET) -> dict[str, str]:
    """Slack's v0 signature: hex HMAC-SHA256 of "v0:{timestamp}:{raw body}" under the signing secret."""
    ts = str(int(time.time()))
    digest = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": f"v0={digest}",
    }


# ---- statistics ----------------------------------------------------------------------------
def pct(xs: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation; NaN for no samples."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


@dataclass
class Dist:
    """Latency samples (ms) of one side of a comparison, pooled over rounds, with per-round medians."""

    samples: list[float] = field(default_factory=list)
    round_p50: list[float] = field(default_factory=list)
    extra: dict[str, float] = field(default_factory=dict)

    def add_round(self, xs: Iterable[float]) -> None:
        xs = list(xs)
        self.samples += xs
        self.round_p50.append(pct(xs, 50))

    @property
    def p50(self) -> float:
        return pct(self.samples, 50)

    @property
    def p99(self) -> float:
        return pct(self.samples, 99)

    def spread(self) -> str:
        """The range of the per-round medians: how much the figure moved between rounds."""
        if not self.round_p50:
            return ""
        return f"{min(self.round_p50):.2f}-{max(self.round_p50):.2f}"

    def summary(self) -> dict[str, Any]:
        return {
            "n": len(self.samples),
            "p50": round(self.p50, 3),
            "p90": round(pct(self.samples, 90), 3),
            "p99": round(self.p99, 3),
            "max": round(max(self.samples), 3) if self.samples else None,
            "round_p50": [round(x, 3) for x in self.round_p50],
            **{k: round(v, 3) for k, v in self.extra.items()},
        }


@dataclass
class Row:
    """One line of the results table: a Parley figure, its baseline, their ratio and the target."""

    measure: str
    case: str
    metric: str
    parley: float
    baseline: float | None = None
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    spread: str = ""
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ratio(a: float, b: float | None) -> float | None:
    return None if not b else a / b


def dump_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)


@dataclass
class Config:
    """How big a run is: `--quick` (CI, under 3 minutes on 2 cores) or the full run."""

    quick: bool
    rounds: int

    def pick(self, quick: Any, full: Any) -> Any:
        return quick if self.quick else full


@dataclass
class Result:
    """What one measurement hands back: table rows, and everything else for the JSON file."""

    rows: list[Row] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
