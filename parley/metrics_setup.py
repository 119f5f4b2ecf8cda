"""Where a command's metrics are served: prometheus_client's multiprocess mode, and its own HTTP server.

Some commands record metrics in processes other than the one serving `/metrics`.
`parley serve --workers N` has uvicorn start N processes. `parley worker --worker-class fork`
starts a child per job. prometheus_client then keeps each process's values in files under
`PROMETHEUS_MULTIPROC_DIR`. It sums them at scrape time. The variable must be set before
prometheus_client is imported. So the CLI calls `use_multiprocess` before importing the
command's module. This module must not import prometheus_client, or anything that does, at
import time.

A process without an HTTP server of its own serves them with `serve_metrics`. That is
`parley worker`, or `parley serve --socket-mode`. It uses prometheus_client's own HTTP server.
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
    """Choose where this command's metrics live.

    Multiprocess mode is for a command serving metrics from several processes. It is also used when
    the operator set `PROMETHEUS_MULTIPROC_DIR`. Every other command keeps them in this process's
    memory. A CLI command serving nothing must not write files into that directory, or fail on it.
    """
    if serves_metrics and (several_processes or os.environ.get(ENV)):
        use_multiprocess()
    else:
        os.environ.pop(ENV, None)


def use_multiprocess() -> Path:
    """Point prometheus_client at a directory of this process tree's own, emptied first.

    An operator's `PROMETHEUS_MULTIPROC_DIR` is used if set. Its `*.db` files from an earlier start
    are removed, as prometheus_client requires. Otherwise a fresh temporary directory is used,
    removed at exit.
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
