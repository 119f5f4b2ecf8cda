"""How the suite runs in parallel under pytest-xdist: how many workers, what runs together, which Redis.

`-n auto` gives a worker per core for `-m unit` alone, whose tests compute, and two per core
(at most 8) otherwise, since those tests mostly wait on processes, servers and timers. With
`--dist loadgroup` a module's tests stay on one worker, so its module-scoped fixtures (servers,
a stack) start once; unit tests spread one by one.

The tests flush their database, so two workers must never share one, and none may touch
database 0 or the one REDIS_URL names (CI's, or a colleague's on a shared server). Worker
`gw<i>` therefore flushes database 20+i. A server with fewer databases (Redis's default is
16) cannot hold them: then the session starts a private Debian `redis-server` on a loopback
port, with just enough databases, and stops it when the session ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

FIRST_DB = 20
BASE_KEY = "parley_redis_base"
PORTS = range(26000, 27000)  # below the ephemeral range; the HA tests use 27000-27599
DEBIAN_SERVER = "/usr/bin/redis-server"
_private: list[tuple[subprocess.Popen[bytes], Path]] = []
_base = pytest.StashKey[str]()


def xdist_worker() -> int | None:
    """This process's number under `pytest -n N`, or None when it is not an xdist worker."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") else None


def with_db(url: str, db: int) -> str:
    """`url` naming database `db` instead of its own (the path, or `?db=` for a socket)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = "&".join([q for q in parts.query.split("&") if q and not q.startswith("db=")] + [f"db={db}"])
        return urlunsplit(parts._replace(query=query))
    return urlunsplit(parts._replace(path=f"/{db}"))


def worker_url(config: pytest.Config, url: str) -> str:
    """The URL this process's tests use: REDIS_URL itself, or its worker's database under xdist."""
    worker = xdist_worker()
    workerinput = getattr(config, "workerinput", None)
    if worker is None or workerinput is None:
        return url
    return with_db(str(workerinput.get(BASE_KEY) or url), FIRST_DB + worker)


def _db_of(url: str) -> int:
    client = redis.Redis.from_url(url)
    try:
        return int(client.connection_pool.connection_kwargs.get("db", 0))
    finally:
        client.close()


def _has_databases(url: str, count: int) -> bool:
    """Whether the server at `url` has databases FIRST_DB..FIRST_DB+count-1 (SELECT fails past its last)."""
    client = redis.Redis.from_url(with_db(url, FIRST_DB + count - 1), socket_timeout=5)
    try:
        return bool(client.ping())
    except redis.ResponseError:
        return False
    finally:
        client.close()


def _die_with_parent() -> None:
    """In the child: a SIGTERM when the pytest process that started it dies, however it dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _free_port() -> int:
    import random
    import socket

    for port in random.sample(PORTS, len(PORTS)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS}")


def start_private_server(databases: int) -> str:
    """A private `redis-server` on loopback with `databases` databases; its URL (database 0)."""
    binary = DEBIAN_SERVER if os.access(DEBIAN_SERVER, os.X_OK) else shutil.which("redis-server")
    if binary is None:
        raise pytest.UsageError("pytest -n needs a redis-server binary for the workers' private Redis")
    workdir = Path(tempfile.mkdtemp(prefix="parley-xdist-redis-"))
    port = _free_port()
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    args += ["--databases", str(databases), "--dir", str(workdir)]
    with (workdir / "redis.log").open("ab") as log:
        proc = subprocess.Popen(
            [binary, *args], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
    _private.append((proc, workdir))
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
    deadline = time.monotonic() + 15
    try:
        while True:
            if proc.poll() is not None:
                raise pytest.UsageError(
                    f"the workers' private redis-server exited: {(workdir / 'redis.log').read_text()}"
                )
            with contextlib.suppress(redis.RedisError):
                if client.ping():
                    break
            if time.monotonic() > deadline:
                raise pytest.UsageError("the workers' private redis-server did not answer PING")
            time.sleep(0.05)
    finally:
        client.close()
    return f"redis://127.0.0.1:{port}/0"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: a worker per core for `-m unit` (its tests compute), two per core up to 8 otherwise (they wait)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if (config.option.markexpr or "").strip() == "unit":
        return max(1, cores)
    return min(2 * cores, 8)


def pytest_configure(config: pytest.Config) -> None:
    """In the xdist controller: pick the server whose databases 20.. the workers use."""
    workers = getattr(config.option, "numprocesses", None)
    if hasattr(config, "workerinput") or not isinstance(workers, int) or workers <= 0 or config.option.collectonly:
        return  # a worker, a run in one process, or `--collect-only` (which xdist runs in one process)
    url = os.environ.get("REDIS_URL")
    if not url:
        return  # each worker starts an embedded server of its own (tests/conftest.py)
    own = _db_of(url)
    if own == 0:
        raise pytest.UsageError(
            "REDIS_URL points at database 0; the tests flush their database, so give them their own"
        )
    taken = FIRST_DB <= own < FIRST_DB + workers
    config.stash[_base] = (
        url if not taken and _has_databases(url, workers) else start_private_server(FIRST_DB + workers)
    )


def _group(item: pytest.Item) -> str | None:
    """The xdist_group of `item`: its module (whose fixtures start once), unless it is a unit test."""
    if item.get_closest_marker("unit") is not None:
        module = vars(getattr(item, "module", None) or object)
        if any(getattr(v, "__module__", "") == "source_trees" for v in module.values()):
            return "source-trees"  # one worker parses Parley's modules once for all the code-rule tests
        return None  # in-process and fixture-free across tests: spread one by one
    return item.nodeid.split("::")[0]  # a module's fixtures (its servers, its stack) start once


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which names each test's group in its id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep a module's tests, which share its fixtures, on one xdist worker (`--dist loadgroup`)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None and (group := _group(item)) is not None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    """Tell each worker which server its database 20+i is on."""
    config = node.config  # type: ignore[attr-defined]
    if _base in config.stash:
        node.workerinput[BASE_KEY] = config.stash[_base]  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    while _private:
        proc, workdir = _private.pop()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Redis database the tests may flush: never database 0 of a shared server."""
    url = os.environ.get("REDIS_URL")
    worker = xdist_worker()
    if url:
        client = redis.Redis.from_url(url)
        db = int(client.connection_pool.connection_kwargs.get("db", 0))
        client.close()
        if db == 0:
            pytest.exit("REDIS_URL points at database 0; the tests flush their database, so give them their own")
        yield worker_url(request.config, url)
        return
    from workers.store import embedded

    data_dir = tmp_path_factory.mktemp("embedded-redis")
    sock = embedded.ensure_server(data_dir)
    holder = embedded.Holder(sock)
    yield f"unix://{sock}?db={worker or 0}"
    holder.release()
