"""`parley runs` as an operator types it: its own process, against the test Redis.

The runs it acts on are made in this process by real executions (an in-process RQ worker
on the test Redis, the test agents); the command runs as a separate `parley` process that
can import those agents, and a test reads its output and exit status as a person would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from redis import Redis
from runtime_helpers import make_runtime, start, work

from parley import cli
from workers.store import keys
from workers.store.records import RunStatus

pytestmark = pytest.mark.system

TESTS = Path(__file__).resolve().parents[1]
PARLEY = Path(sys.executable).with_name("parley")


def parley_runs(redis_url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`parley runs <args>` in a process of its own, on the test Redis, with the test agents importable."""
    env = {
        **os.environ,
        "REDIS_URL": redis_url,
        "PARLEY_AGENTS": "agents_for_tests",
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "PARLEY_DATA_DIR": str(tmp_path),
    }
    return subprocess.run(
        [str(PARLEY), "runs", *args], env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
    )


def test_the_runs_command_lists_shows_cancels_and_retries(redis_url: str, r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    waiting = start(rt, "t-ask")
    broken = start(rt, "t-flaky", {"fail": "always"})
    work(rt)
    older = [rt.store.create("t-ask", f"queued {i}", "U2", {}).id for i in range(20)]

    listed = parley_runs(redis_url, tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["RUN", "AGENT", "STATUS", "STARTED", "BY", "UPDATED", "TEXT"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].split()[:4] == [older[-1], "t-ask", "queued", "U2"]  # newest first
    assert sum(1 for line in lines if line.startswith("r")) == 20
    assert "queued: 20  paused: 1  failed: 1" in listed.stdout
    assert "more: parley runs list --page 2" in listed.stdout

    second = parley_runs(redis_url, tmp_path, "list", "--page", "2")
    assert second.returncode == 0, second.stderr
    assert {waiting, broken} <= set(second.stdout.split()) and "more:" not in second.stdout
    failed_only = parley_runs(redis_url, tmp_path, "list", "--status", "failed")
    assert failed_only.returncode == 0 and broken in failed_only.stdout and waiting not in failed_only.stdout

    shown = parley_runs(redis_url, tmp_path, "show", waiting)
    assert shown.returncode == 0, shown.stderr
    assert f"run {waiting}  agent t-ask  status paused  started by U1" in shown.stdout
    assert "waiting on U1" in shown.stdout and "Pick a colour" in shown.stdout
    assert "EVENT" in shown.stdout and "started" in shown.stdout

    cancelled = parley_runs(redis_url, tmp_path, "cancel", waiting)
    assert (cancelled.returncode, cancelled.stdout.strip()) == (0, f"run {waiting} is cancelled")
    assert rt.store.get(waiting).status is RunStatus.CANCELLED
    retried = parley_runs(redis_url, tmp_path, "retry", broken)
    assert (retried.returncode, retried.stdout.strip()) == (0, f"run {broken} is queued")
    assert rt.store.get(broken).status is RunStatus.QUEUED

    unknown = parley_runs(redis_url, tmp_path, "show", "r-no-such-run")
    assert unknown.returncode != 0 and unknown.stdout == ""
    assert unknown.stderr.strip() == "parley: no run 'r-no-such-run'"
    again = parley_runs(redis_url, tmp_path, "cancel", waiting)
    assert again.returncode != 0 and "is cancelled; only queued, running or paused runs" in again.stderr
    bad = parley_runs(redis_url, tmp_path, "list", "--status", "sleeping")
    assert bad.returncode != 0 and "--status must be one of: queued, running" in bad.stderr


def test_the_purge_command_lists_what_it_deletes_and_a_dry_run_deletes_nothing(
    redis_url: str, r: Redis, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = make_runtime(r, tmp_path)
    done = [start(rt, "t-flaky", {"fail": 0}) for _ in range(2)]
    waiting = start(rt, "t-ask")
    work(rt)
    before = {k: r.dump(k) for k in r.scan_iter("*")}

    dry = parley_runs(redis_url, tmp_path, "purge", "--older-than", "0", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == [
        *done,
        "would purge 2 finished run(s) last updated more than 0s ago (dry run: nothing was deleted)",
    ]
    assert {k: r.dump(k) for k in r.scan_iter("*")} == before

    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("PARLEY_DATA_DIR", str(tmp_path))
    capsys.readouterr()
    assert cli.main(["runs", "purge", "--older-than", "1h"]) == 0
    assert capsys.readouterr().out.splitlines() == ["purged 0 finished run(s) last updated more than 1h ago"]
    assert cli.main(["runs", "purge", "--older-than", "0"]) == 0
    assert capsys.readouterr().out.splitlines() == [*done, "purged 2 finished run(s) last updated more than 0s ago"]
    assert [rt.store.find(run_id) for run_id in done] == [None, None]
    assert rt.store.get(waiting).status is RunStatus.PAUSED

    with pytest.raises(SystemExit) as exit_:
        cli.main(["runs", "purge", "--older-than", "a while"])
    assert exit_.value.code == 2
    assert "argument --older-than: must be a duration such as 30d, 12h, 15m, 90s" in capsys.readouterr().err


def test_a_record_it_cannot_read_never_breaks_list_or_show(redis_url: str, r: Redis, tmp_path: Path) -> None:
    """A question expiring in year 33715 (as an unbounded `expires_in` wrote it) and a garbled run hash."""
    rt = make_runtime(r, tmp_path)
    far, garbled, fine = (start(rt, "t-ask") for _ in range(3))
    work(rt)
    iid = rt.store.get(far).interrupt
    r.hset(keys.interrupt(iid), "expires_at", repr(1e12 + 1.7e9))
    r.hset(keys.run(garbled), "status", "sleeping")

    listed = parley_runs(redis_url, tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines() if line.startswith("r")}
    assert {far, garbled, fine} <= set(rows)
    assert "unreadable record" in rows[garbled]

    shown = parley_runs(redis_url, tmp_path, "show", far)
    assert shown.returncode == 0, shown.stderr
    assert "waiting on U1" in shown.stdout and "expires ?" in shown.stdout


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
def test_a_reader_that_stops_reading_ends_the_list_quietly(
    unbuffered: str, redis_url: str, r: Redis, tmp_path: Path
) -> None:
    """`parley runs list | head -1`: the pipe is closed before the list is written, and nothing is said of it."""
    rt = make_runtime(r, tmp_path)
    for i in range(20):
        rt.store.create("t-ask", f"queued {i}", "U2", {})
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
        "REDIS_URL": redis_url,
        "PARLEY_DATA_DIR": str(tmp_path),
        **({"PYTHONUNBUFFERED": unbuffered} if unbuffered else {}),
    }
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line
    try:
        done = subprocess.run(
            [str(PARLEY), "runs", "list"], env=env, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=30,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert done.stderr == "", done.stderr
    assert done.returncode == 1  # as Python's documented idiom for a closed pipe exits
