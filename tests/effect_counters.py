"""Side effects the test agents count, in files under a run's data directory.

The counts live outside Redis and outside any process's memory: an execution in a worker
that was killed (even with SIGKILL) still counts, and a test reads the count afterwards
from its own process. Appending one byte per occurrence keeps concurrent bumps from
several processes exact.
"""

from __future__ import annotations

from pathlib import Path


def counter_path(data_dir: Path, run_id: str, name: str) -> Path:
    """The file that counts occurrences of `name` for `run_id`: one byte each."""
    return data_dir / "counters" / f"{run_id}.{name}"


def bump(data_dir: Path, run_id: str, name: str) -> int:
    """Count one occurrence of `name` for `run_id` and return the new count; appends are atomic across processes."""
    path = counter_path(data_dir, run_id, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write("x")
    return count(data_dir, run_id, name)


def count(data_dir: Path, run_id: str, name: str) -> int:
    """How many times `name` was bumped for `run_id` (0 before the first)."""
    path = counter_path(data_dir, run_id, name)
    return len(path.read_text()) if path.exists() else 0
