"""Finding the processes a test started, through /proc, to show that none is left behind.

A supervisor test gives its run a data directory of its own; every process that belongs to
the run names that directory on its command line (the embedded Redis) or in its environment
(`PARLEY_DATA_DIR`), so whatever still does once the run has stopped was left behind.
"""

from __future__ import annotations

import os
from pathlib import Path


def read_proc_file(path: Path) -> str:
    """A /proc file as text (NULs as spaces); empty when the process is gone."""
    try:
        return path.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def cmdline(pid: int) -> str:
    """`pid`'s command line, its arguments joined by spaces; empty when it is gone."""
    return read_proc_file(Path(f"/proc/{pid}/cmdline"))


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped counts as gone)."""
    status = read_proc_file(Path(f"/proc/{pid}/status"))
    return bool(status) and "State:\tZ" not in status


def children(pid: int) -> list[int]:
    """The live processes whose parent is `pid`."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            status = read_proc_file(proc / "status")
            if f"\nPPid:\t{pid}\n" in status and "State:\tZ" not in status:
                found.append(int(proc.name))
    return found


def leftover_processes(data_dir: Path, *markers: str) -> list[str]:
    """Live processes (not this one) naming `data_dir` or any of `markers`, as `pid: command line`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        if "State:\tZ" in read_proc_file(proc / "status"):
            continue
        cmdline, environ = read_proc_file(proc / "cmdline"), read_proc_file(proc / "environ")
        if any(m in cmdline for m in (str(data_dir), *markers)) or f"PARLEY_DATA_DIR={data_dir}" in environ:
            found.append(f"{proc.name}: {cmdline.strip()}")
    return found
