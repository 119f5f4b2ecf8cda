"""Admin operations on runs (list, show, cancel, retry), in-process and through `parley runs`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from effect_counters import bump, count
from redis import Redis
from runtime_helpers import dump_database, make_runtime, runtime_and_host, start, work

from workers.exceptions import AdminError, RunNotFound
from workers.interaction import Answer
from workers.runtime import admin
from workers.runtime.acceptance import accept
from workers.runtime.sweep import sweep
from workers.store.records import RunStatus

TESTS = Path(__file__).resolve().parent
PARLEY = Path(sys.executable).with_name("parley")


def test_list_runs_pages_newest_first(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    ids = [rt.store.create("t-ask", f"run {i}", "U1", {"host": "test"}).id for i in range(25)]
    newest_first = ids[::-1]

    pages = [admin.list_runs(rt, page=n, per_page=10) for n in range(4)]
    assert [[run.id for run in p.runs] for p in pages] == [
        newest_first[:10],
        newest_first[10:20],
        newest_first[20:],
        [],
    ]
    assert [p.has_next for p in pages] == [True, True, False, False]
    assert pages[0].runs[0].text == "run 24"

    for run_id in ids[3:6]:
        admin.cancel(rt, run_id, by="U-admin")
    cancelled = admin.list_runs(rt, RunStatus.CANCELLED, per_page=2)
    assert [run.id for run in cancelled.runs] == [ids[5], ids[4]] and cancelled.has_next
    assert [run.id for run in admin.list_runs(rt, RunStatus.CANCELLED, page=1, per_page=2).runs] == [ids[3]]
    counts = rt.store.counts()
    assert counts["queued"] == 22 and counts["cancelled"] == 3
    assert sum(counts.values()) == 25


def test_show_gives_the_run_its_open_question_and_history(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run_id = start(rt, "t-ask", {"expires_in": 600})
    work(rt)
    detail = admin.show(rt, run_id)
    assert detail.run.status is RunStatus.PAUSED
    assert detail.interrupt is not None and detail.interrupt.id == detail.run.interrupt
    assert detail.interrupt.request.reason == "Pick a colour"
    assert [h.event for h in detail.history] == ["started"]

    accept(rt, detail.interrupt.id, "U1", [Answer(id="colour", choice="green")])
    work(rt)
    detail = admin.show(rt, run_id)
    assert detail.run.status is RunStatus.SUCCEEDED
    assert [(h.event, h.by) for h in detail.history] == [("started", "U1"), ("answered", "U1"), ("succeeded", "")]
    assert detail.history[1].detail["answers"] == [{"id": "colour", "choice": "green"}]
    with pytest.raises(RunNotFound):
        admin.show(rt, "r-no-such-run")


def test_retry_of_a_failed_run_finishes_it_and_posts_the_final(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-flaky", {"fail": "always"})
    work(rt)
    failed = rt.store.get(run_id)
    assert failed.status is RunStatus.FAILED and failed.failures == 3
    assert host.failures == [(run_id, failed.error)]
    assert rt.store.journal_get(run_id, "fx:final") == "done"

    bump(tmp_path, run_id, "fixed")  # whatever broke it is mended
    queued = admin.retry(rt, run_id, by="U-admin")
    assert queued.status is RunStatus.QUEUED and queued.failures == 0 and queued.error == ""
    assert queued.epoch == failed.epoch + 1
    assert rt.store.journal_get(run_id, "fx:final") is None
    work(rt)

    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED
    assert run.result == "ok after 5 executions, step 1"
    assert host.finals == [(run_id, run.result)]
    assert rt.store.journal_get(run_id, "fx:final") == "done"
    assert count(tmp_path, run_id, "step") == 1
    assert [(h.event, h.by) for h in rt.store.history(run_id) if h.event == "retried"] == [("retried", "U-admin")]


def test_retry_of_an_expired_run_asks_its_question_again(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-ask", {"expires_in": 1})
    work(rt)
    expired_q = rt.store.get(run_id).interrupt
    assert sweep(rt, now=time.time() + 2).expired == [expired_q]
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.EXPIRED

    admin.retry(rt, run_id, by="U-admin")
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.PAUSED, run.error
    assert run.interrupt != expired_q
    accept(rt, run.interrupt, "U1", [Answer(id="colour", choice="red")])
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.SUCCEEDED and run.result == "colour red"
    assert host.finals == [(run_id, "colour red")]


def test_retry_and_cancel_refuse_runs_in_the_wrong_status(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    done = start(rt, "t-flaky", {"fail": 0})
    broken = start(rt, "t-flaky", {"fail": "always"})
    waiting = start(rt, "t-ask")
    work(rt)
    assert rt.store.get(done).status is RunStatus.SUCCEEDED
    assert rt.store.get(broken).status is RunStatus.FAILED
    assert rt.store.get(waiting).status is RunStatus.PAUSED

    before = dump_database(r)
    with pytest.raises(AdminError, match="is succeeded; only failed or expired runs can be retried"):
        admin.retry(rt, done, by="U-admin")
    with pytest.raises(AdminError, match="is paused; only failed or expired"):
        admin.retry(rt, waiting, by="U-admin")
    for finished in (done, broken):
        with pytest.raises(AdminError, match="only queued, running or paused runs can be cancelled"):
            admin.cancel(rt, finished, by="U-admin")
    with pytest.raises(RunNotFound):
        admin.cancel(rt, "r-no-such-run", by="U-admin")
    assert dump_database(r) == before


def parley_runs(redis_url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
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


def test_a_retried_run_that_raises_again_gets_its_retries_again(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-flaky", {"fail": "always"})
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.FAILED

    admin.retry(rt, run_id, by="U-admin")  # nothing was mended: it fails again, after three more retries
    work(rt)
    run = rt.store.get(run_id)
    assert run.status is RunStatus.FAILED, run.status
    assert run.error == "RuntimeError: still broken on execution 8"
    assert count(tmp_path, run_id, "executions") == 8
    assert len(host.failures) == 2
