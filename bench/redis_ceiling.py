"""A Redis server of the measurement's own, and the figures that bound what one Redis can carry.

Commands per cycle are read from `INFO commandstats` deltas, which count every client of the
server: the shared Redis the other measurements use has other users, so scale-out runs on a
private `redis-server` on a free loopback port (Debian's, 7.x, when installed; else the one on
PATH). Its raw rate comes from `redis-benchmark` against that same private server.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import redis

from bench.measurement import find_tool
from bench.processes import Proc, free_port, wait_until
from bench.stack import Stack

TOOLS = {
    "redis-server": "apt-get install -y redis-server",
    "redis-benchmark": "apt-get install -y redis-tools",
    "haproxy": "apt-get install -y haproxy",
}
"""The programs measured beside Parley here, and how to install each (Debian's packages)."""

BENCH_TESTS = "set,get,incr,lpush,rpop,sadd,hset,zadd"
"""redis-benchmark's tests: the single-key commands of the kinds Parley's cycle sends."""


def redis_binary(name: str) -> str:
    """Debian's binary first (the version a production Redis is likelier to run), else PATH's."""
    return find_tool(name, TOOLS[name])


def private_redis(stack: Stack, *, tuned: bool = True) -> tuple[Proc, int, redis.Redis]:
    """A fresh `redis-server` on a free loopback port, no persistence; (process, port, client on db 1).

    `tuned`: with `hash-max-listpack-value 2048`, as docs/reliability.md recommends; else Redis's defaults."""
    port = free_port()
    data = stack.tmp / f"redis-{port}"
    data.mkdir(parents=True, exist_ok=True)
    argv = [
        redis_binary("redis-server"),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(data),
        *(["--hash-max-listpack-value", "2048"] if tuned else []),
    ]
    proc = stack.start_process("private-redis", argv)
    client = redis.Redis(host="127.0.0.1", port=port, db=1)
    wait_until(lambda: bool(client.ping()), 20, "the private redis-server", proc)
    return proc, port, client


def commandstats(client: redis.Redis) -> dict[str, tuple[int, float]]:
    """{command: (calls, microseconds)} since the last `CONFIG RESETSTAT`."""
    stats = client.info("commandstats")
    return {k.removeprefix("cmdstat_"): (int(v["calls"]), float(v["usec"])) for k, v in stats.items()}


def redis_benchmark(port: int, requests: int, clients: int = 50) -> dict[str, float]:
    """Requests/s per test from `redis-benchmark` on loopback (db 2 of the private server)."""
    argv = [
        redis_binary("redis-benchmark"),
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "--dbnum",
        "2",
        "-n",
        str(requests),
        "-c",
        str(clients),
        "-t",
        BENCH_TESTS,
        "--csv",
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True).stdout
    rates: dict[str, float] = {}
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split(",")]
        if len(cells) >= 2 and re.fullmatch(r"[0-9.]+", cells[1]):
            rates[cells[0]] = float(cells[1])
    if not rates:
        raise RuntimeError(f"redis-benchmark printed no rates:\n{out[-500:]}")
    return rates


def haproxy(stack: Stack, backends: list[int]) -> tuple[Proc, int]:
    """HAProxy (Debian's) on a free port, round-robin over `backends`, each request balanced."""
    binary = find_tool("haproxy", TOOLS["haproxy"])
    port = free_port()
    servers = "\n".join(f"  server r{i} 127.0.0.1:{p} check inter 1s" for i, p in enumerate(backends, start=1))
    config = f"""global
  maxconn 1024
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend slack
  bind 127.0.0.1:{port}
  default_backend parley
backend parley
  balance roundrobin
  option httpchk GET /healthz
{servers}
"""
    path: Path = stack.tmp / "haproxy.cfg"
    path.write_text(config)
    return stack.start_process("haproxy", [binary, "-db", "-f", str(path)]), port
