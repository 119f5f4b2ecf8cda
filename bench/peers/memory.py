"""What a process group holds in memory, read from /proc: PSS (shared pages split fairly) and RSS.

PSS is the fair figure for many similar processes (N paused Prefect flows share their
libraries' pages, and each is charged its share); RSS is what one process maps. Both
come from `/proc/<pid>/smaps_rollup`, summed over every live process of a group, so a
server's or runner's children are counted with it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Memory:
    """Kilobytes held by a set of processes."""

    pss_kb: int
    rss_kb: int
    processes: int

    def __add__(self, other: Memory) -> Memory:
        return Memory(self.pss_kb + other.pss_kb, self.rss_kb + other.rss_kb, self.processes + other.processes)

    @property
    def pss_mb(self) -> float:
        return self.pss_kb / 1024

    @property
    def rss_mb(self) -> float:
        return self.rss_kb / 1024


NOTHING = Memory(0, 0, 0)


def parse_rollup(text: str) -> dict[str, int]:
    """The `Name: <n> kB` fields of an smaps_rollup file, in kB."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[name.strip()] = int(parts[0])
    return out


def parse_pgrp(stat: str) -> int:
    """The process group id from a /proc/<pid>/stat line (the field after the command's `)`)."""
    return int(stat.rsplit(")", 1)[1].split()[2])


def group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                if parse_pgrp(f.read()) == pgid:
                    pids.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def process_memory(pid: int) -> Memory:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            fields = parse_rollup(f.read())
    except OSError:
        return NOTHING
    return Memory(fields.get("Pss", 0), fields.get("Rss", 0), 1)


def group_memory(pgid: int) -> Memory:
    """PSS and RSS summed over every live process in a process group."""
    total = NOTHING
    for pid in group_pids(pgid):
        total = total + process_memory(pid)
    return total
