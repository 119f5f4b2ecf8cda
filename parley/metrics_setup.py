"""Where a command's metrics are served: prometheus_client's multiprocess mode, and its own HTTP server.

`parley serve --workers N` (uvicorn starts N processes) and `parley worker --worker-class fork`
(a child per job) record metrics in processes other than the one that serves `/metrics`.
prometheus_client then keeps each process's values in files under `PROMETHEUS_MULTIPROC_DIR`
and sums them at scrape time. The variable must be set before prometheus_client is imported,
so the CLI calls `use_multiprocess` before it imports the command's module. This module must
not import prometheus_client (nor anything that does) at import time.

A process with no HTTP server of its own (`parley worker`, `parley serve --socket-mode`) serves
them with `serve_metrics`, on prometheus_client's own HTTP server.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from workers.exceptions import ConfigError
from workers.logs import Log

if TYPE_CHECKING:
    from workers.store.runs import RunStore

log = Log("parley.metrics")

ENV = "PROMETHEUS_MULTIPROC_DIR"


def prepare(*, serves_metrics: bool, several_processes: bool) -> None:
    """Multiprocess mode for a command that serves metrics from several processes, or whose
    operator set `PROMETHEUS_MULTIPROC_DIR`; in this process's memory for every other command
    (a CLI command that serves nothing must not write files into, or fail on, that directory)."""
    if serves_metrics and (several_processes or os.environ.get(ENV)):
        use_multiprocess()
    else:
        os.environ.pop(ENV, None)


def use_multiprocess() -> Path:
    """Point prometheus_client at a directory of this process tree's own, emptied first.

    An operator's `PROMETHEUS_MULTIPROC_DIR` is used (its `*.db` files from an earlier start are
    removed, as prometheus_client requires); otherwise a fresh temporary directory, removed at exit.
    """
    given = os.environ.get(ENV)
    if given:
        path = Path(given)
        path.mkdir(parents=True, exist_ok=True)
        for stale in path.glob("*.db"):
            stale.unlink(missing_ok=True)
        return path
    path = Path(tempfile.mkdtemp(prefix="parley-metrics-"))
    os.environ[ENV] = str(path)
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:  # a forked child inherits the handler; only the owner removes the directory
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(remove)
    return path


def serve_metrics(store: RunStore, host: str, port: int) -> None:
    """Serve this process's metrics at http://host:port/metrics from a thread of prometheus_client's."""
    from prometheus_client import start_http_server

    from workers.metrics import scrape_registry

    try:
        start_http_server(port, addr=host, registry=scrape_registry(store))
    except OSError as exc:
        raise ConfigError(f"--metrics-port {port}: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    log.info("serving metrics", url=f"http://{host}:{port}/metrics")
