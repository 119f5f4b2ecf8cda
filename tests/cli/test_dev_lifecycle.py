"""`parley dev` starts everything and stops everything: no process left behind, no port held.

Each run uses a data directory of its own and the embedded Redis (REDIS_URL unset, the
newcomer's path), so every process that belongs to it can be found afterwards by that
directory, its port, or its worker name, in /proc.
"""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from process_support import children, cmdline, leftover_processes
from slack_stack import can_listen

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds leftover processes through /proc"),
]

READY = "Parley playground: http://127.0.0.1:{port}"
START_TIMEOUT = 90.0
REAP_TIMEOUT = 20.0


DEV_PORTS = range(24000, 26000, 3)  # below the ephemeral range: a client's source port never takes one


def port_pair_free(port: int) -> bool:
    """Whether `parley dev --port PORT` could bind now: it uses PORT, PORT+1 and PORT+2."""
    for p in (port, port + 1, port + 2):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                return False
    return True


def free_port_pair() -> int:
    """A `--port` for `parley dev` whose three ports are free and outside the ephemeral range.

    Why not port 0: a port the kernel hands out is an ephemeral one, and while a slow start
    (the README's set-up installs packages first) runs, any test's outgoing connection may take it.
    """
    candidates = list(DEV_PORTS)
    random.shuffle(candidates)
    for port in candidates:
        if port_pair_free(port):
            return port
    raise RuntimeError(f"no three free consecutive ports in {DEV_PORTS}")


def belonging_to(data_dir: Path, port: int) -> list[str]:
    """Processes whose command line or environment names this run's data directory, ports or worker."""
    return leftover_processes(data_dir, f"--port {port + 1}", f"parley-dev-{port}-", f"dev --port {port}")


class Dev:
    def __init__(self, tmp_path: Path, n: int, log_level: str = "WARNING") -> None:
        self.port = free_port_pair()
        self.data_dir = tmp_path / f"data-{n}"
        self.log = tmp_path / f"dev-{n}.log"
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",) and not k.startswith("SLACK_")}
        env.update(PARLEY_DATA_DIR=str(self.data_dir), PARLEY_LOG_LEVEL=log_level)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "parley.cli", "dev", "--port", str(self.port)],
                env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while READY.format(port=self.port) not in self.output():
            assert self.proc.poll() is None, f"parley dev exited early:\n{self.output()}"
            assert time.monotonic() < deadline, f"parley dev not ready:\n{self.output()}"
            time.sleep(0.1)
        assert httpx.get(f"http://127.0.0.1:{self.port}/", timeout=5).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{self.port + 1}/healthz", timeout=5).status_code == 200

    def ctrl_c(self) -> None:
        """What a terminal does on Ctrl-C: SIGINT to the foreground process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def assert_nothing_left(self) -> None:
        deadline = time.monotonic() + REAP_TIMEOUT  # the embedded Redis goes once nobody holds it
        while (left := belonging_to(self.data_dir, self.port)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert left == [], f"left behind: {left}\n{self.output()}"
        assert can_listen(self.port) and can_listen(self.port + 1), f"a port is still held\n{self.output()}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def test_started_and_stopped_five_times_leaves_nothing_behind(tmp_path: Path) -> None:
    for n in range(5):
        dev = Dev(tmp_path, n)
        try:
            dev.wait_ready()
            assert belonging_to(dev.data_dir, dev.port), "the children should be visible while running"
            dev.ctrl_c()
            assert dev.proc.wait(30) == 0, dev.output()
            assert "stopped everything" not in dev.output()
            dev.assert_nothing_left()
        finally:
            dev.kill()


def test_a_crashed_child_stops_everything_with_a_message(tmp_path: Path) -> None:
    dev = Dev(tmp_path, 0)
    try:
        dev.wait_ready()
        [worker] = [p for p in children(dev.proc.pid) if f"worker --name parley-dev-{dev.port}-" in cmdline(p)]
        os.kill(worker, signal.SIGKILL)
        assert dev.proc.wait(30) == 1
        assert "parley dev: `parley worker` exited with code -9; stopped everything." in dev.output()
        dev.assert_nothing_left()
    finally:
        dev.kill()


def test_a_second_ctrl_c_stops_at_once(tmp_path: Path) -> None:
    dev = Dev(tmp_path, 0)
    try:
        dev.wait_ready()
        started = time.monotonic()
        dev.ctrl_c()
        time.sleep(0.05)
        dev.ctrl_c()
        assert dev.proc.wait(30) == 0
        assert time.monotonic() - started < 5
        dev.assert_nothing_left()
    finally:
        dev.kill()


def test_a_busy_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    port = free_port_pair()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port + 1))
        busy.listen()
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env["PARLEY_DATA_DIR"] = str(tmp_path / "data")
        done = subprocess.run(
            [sys.executable, "-m", "parley.cli", "dev", "--port", str(port)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 2
    assert f"port {port + 1} is in use" in done.stderr
    assert belonging_to(tmp_path / "data", port) == [] or _wait_gone(tmp_path / "data", port)


def _wait_gone(data_dir: Path, port: int) -> bool:
    deadline = time.monotonic() + REAP_TIMEOUT
    while belonging_to(data_dir, port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_a_second_dev_on_the_same_data_dir_is_refused_and_the_first_keeps_working(tmp_path: Path) -> None:
    """Two on one folder would share one embedded Redis and job queue: runs would go to the wrong playground."""
    first = Dev(tmp_path, 0)
    second: subprocess.Popen[str] | None = None
    try:
        first.wait_ready()
        deadline = time.monotonic() + 30
        while (found := re.search(r'"Bearer (pk_[^"]+)"', first.output())) is None:
            assert time.monotonic() < deadline, first.output()
            time.sleep(0.1)
        token = found[1]
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("SLACK_")}
        env.update(PARLEY_DATA_DIR=str(first.data_dir))
        second = subprocess.Popen(
            [sys.executable, "-m", "parley.cli", "dev", "--port", str(free_port_pair())],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            start_new_session=True,
        )  # fmt: skip
        out, err = second.communicate(timeout=60)
        assert second.returncode == 2 and out == "", (second.returncode, out, err)
        assert err == (
            f"parley: parley dev is already running for the data directory {first.data_dir.resolve()} "
            f"(pid {first.proc.pid}, port {first.port}); stop it first, or give this one its own PARLEY_DATA_DIR\n"
        ), err

        assert first.proc.poll() is None, first.output()
        assert httpx.get(f"http://127.0.0.1:{first.port + 1}/healthz", timeout=5).status_code == 200
        listed = httpx.get(
            f"http://127.0.0.1:{first.port}/api/v1/questions", headers={"Authorization": f"Bearer {token}"}, timeout=10
        )
        assert listed.status_code == 200, listed.text  # its MCP token was not revoked by a second start

        os.kill(first.proc.pid, signal.SIGKILL)  # the kernel drops a killed one's lock: it blocks no next one
        first.proc.wait(10)
        again = Dev(tmp_path, 0)
        try:
            again.wait_ready()
        finally:
            again.kill()
    finally:
        if second is not None and second.poll() is None:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait(10)
        first.kill()
