"""prometheus_client's multiprocess mode for a command that records metrics in several processes.

`parley serve --workers N` (gunicorn forks N processes) and `parley worker --worker-class fork`
(a child per job) record metrics in processes other than the one that serves `/metrics`.
prometheus_client then keeps each process's values in files under `PROMETHEUS_MULTIPROC_DIR`
and sums them at scrape time. The variable must be set before prometheus_client is imported,
so the CLI calls `use_multiprocess` before it imports the command's module. This module must
not import prometheus_client (nor anything that does).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"


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
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(path, ignore_errors=True))
    return path
