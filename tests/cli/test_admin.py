"""Admin operations on runs (list, show, cancel, retry), in-process and through `parley runs`."""

from __future__ import annotations

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

pytestmark = pytest.mark.integration


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
    run_id = start(rt, "t-ask", {"expires_in": 30})  # the retried question must still be open when answered
    work(rt)
    expired_q = rt.store.get(run_id).interrupt
    assert sweep(rt, now=time.time() + 60).expired == [expired_q]
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
