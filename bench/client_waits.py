"""The client side of measurement 14: waits held open by one Python client, in a process of their own.

`python -m bench.client_waits sync|async BASE_URL TOKEN N_IDS_FILE` opens a wait on each id in
the file with `Parley` (a thread each, one shared connection pool) or `AsyncParley` (a task
each, one event loop). It then prints one JSON line: the process's threads, resident memory
and reserved address space before and after, so the parent divides by the number of waits. A process of its own
keeps those figures clean of the bench's own threads and allocations.

After that, each id read on stdin is waited on at once, and "<id> sent" is printed as its
request goes out; "<id> <epoch seconds>" is printed the moment its wait returns, so the
parent times a Submit click to the return while the other waits stay open.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import httpx

from parley import AsyncParley, Parley

HOLD = 600  # seconds each background wait may last: longer than the measurement


def _status_kb(field: str) -> int:
    """A memory figure of this process from /proc, in KB (`VmRSS` resident, `VmSize` reserved)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _footprint(threads0: int, rss0: int, vm0: int) -> None:
    _say(
        threads_before=threads0,
        threads_after=threading.active_count(),
        rss_kb_before=rss0,
        rss_kb_after=_status_kb("VmRSS"),
        vm_kb_before=vm0,
        vm_kb_after=_status_kb("VmSize"),
    )


def _say(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def _settle(seconds: float) -> None:
    """Let every request reach the server and the process's memory stop moving."""
    time.sleep(seconds)


def run_sync(base: str, token: str, ids: list[str]) -> None:
    limits = httpx.Limits(max_connections=len(ids) + 16, max_keepalive_connections=len(ids) + 16)
    http = httpx.Client(base_url=base, timeout=HOLD + 30, limits=limits)
    client = Parley(base, token, http=http)
    before = threading.active_count(), _status_kb("VmRSS"), _status_kb("VmSize")
    for qid in ids:
        threading.Thread(target=_quietly, args=(client, qid), daemon=True).start()
    _settle(3.0)
    _footprint(*before)
    for line in sys.stdin:
        qid = line.strip()
        done = threading.Thread(target=_timed, args=(client, qid), daemon=True)
        done.start()
        _say(sent=qid)


def _quietly(client: Parley, qid: str) -> None:
    try:
        client.wait(qid, timeout=HOLD)
    except Exception:  # the measurement ends by killing this process; nothing to report
        return


def _timed(client: Parley, qid: str) -> None:
    client.wait(qid, timeout=60)
    _say(returned=qid, at=time.time())


async def run_async(base: str, token: str, ids: list[str]) -> None:
    async with AsyncParley(base, token) as client:
        before = threading.active_count(), _status_kb("VmRSS"), _status_kb("VmSize")
        background = [asyncio.create_task(client.wait(qid, timeout=HOLD)) for qid in ids]
        await asyncio.sleep(3.0)
        _footprint(*before)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

        async def timed(qid: str) -> None:
            await client.wait(qid, timeout=60)
            _say(returned=qid, at=time.time())

        timers: list[asyncio.Task[None]] = []
        while line := await reader.readline():
            qid = line.decode().strip()
            timers.append(asyncio.create_task(timed(qid)))
            _say(sent=qid)
        await asyncio.gather(*timers)
        for task in background:
            task.cancel()


def main(argv: list[str]) -> None:
    mode, base, token, ids_file = argv
    ids = [line for line in Path(ids_file).read_text().split() if line]
    if mode == "sync":
        run_sync(base, token, ids)
    else:
        asyncio.run(run_async(base, token, ids))


if __name__ == "__main__":
    main(sys.argv[1:])
