"""What a question and a paused run keep in Redis stays small with Redis's defaults, and
records written in the layout before still read, answer, resume and purge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from redis import Redis
from runtime_helpers import RecordingHost, make_runtime, paused, start, work

from workers.interaction import Answer, Outcome, Request
from workers.runtime.acceptance import accept
from workers.runtime.host import PausingRun
from workers.runtime.wiring import Runtime
from workers.store import keys
from workers.store.records import RunStatus

DIGEST = "7c4e9212a3a5397f07136ce21bf9c54e7f3a1e06bb030a4676fa13a14e531fcc"
PLACE = {"channel": "C0GENERAL", "ts": "1796459340.580401", "version": 1}
COMPACT = (b"listpack", b"ziplist")  # a hash kept whole in one allocation (Redis 7, Redis 6)


class PostingHost(RecordingHost):
    """Records where it posted as Slack's host does: the blocks' digest with it, at the park."""

    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        if not run.question_message:
            self.questions.append((run.run_id, run.interrupt_id or ""))
            run.record_question_message({**PLACE, "blocks_digest": DIGEST}, parked_next=True)
        return Outcome(paused=True)


def _posted(r: Redis, tmp_path: Path) -> tuple[Runtime, str, str]:
    rt = make_runtime(r, tmp_path, PostingHost())
    run_id = start(rt, "t-ask")
    work(rt)
    return rt, run_id, paused(rt, run_id)


@pytest.mark.integration
def test_a_posted_question_keeps_its_blocks_digest_in_a_compact_hash(r: Redis, tmp_path: Path) -> None:
    rt, _, iid = _posted(r, tmp_path)
    assert r.object("encoding", keys.interrupt(iid)) in COMPACT
    assert json.loads(r.hget(keys.interrupt(iid), "message") or b"{}") == PLACE
    question = rt.store.interrupt(iid)
    assert question is not None and question.message == {**PLACE, "blocks_digest": DIGEST}


@pytest.mark.integration
def test_a_message_written_whole_with_its_digest_still_reads_and_resumes(r: Redis, tmp_path: Path) -> None:
    rt, run_id, iid = _posted(r, tmp_path)
    r.hdel(keys.interrupt(iid), "blocks_digest")  # as the version before wrote it: one JSON
    r.hset(keys.interrupt(iid), "message", json.dumps({**PLACE, "blocks_digest": DIGEST}))
    question = rt.store.interrupt(iid)
    assert question is not None and question.message == {**PLACE, "blocks_digest": DIGEST}
    accept(rt, iid, "U1", [Answer(id="colour", choice="green")])
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED


@pytest.mark.integration
def test_a_message_rewritten_without_a_digest_drops_the_old_one(r: Redis, tmp_path: Path) -> None:
    rt, _, iid = _posted(r, tmp_path)
    rt.store.set_message(iid, {**PLACE, "version": 2})
    question = rt.store.interrupt(iid)
    assert question is not None and question.message == {**PLACE, "version": 2}


@pytest.mark.integration
def test_a_run_s_start_is_read_from_its_hash_not_kept_in_a_list(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run = rt.store.create("t-ask", "ship it", "U1", {"host": "test", "team": "T1"})
    assert not r.exists(keys.history(run.id))
    [start] = rt.store.history(run.id)
    assert (start.event, start.by, start.at) == ("started", "U1", run.created_at)
    assert start.detail == {"agent": "t-ask", "text": "ship it"}


@pytest.mark.integration
def test_a_history_kept_whole_by_the_version_before_reads_once(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1"})
    entry = {"at": run.created_at, "event": "started", "by": "U1", "detail": {"agent": "t-ask", "text": ""}}
    r.rpush(keys.history(run.id), json.dumps(entry))  # as the version before wrote it
    rt.store.add_history(run.id, "noted", "U2")
    assert [(h.event, h.by) for h in rt.store.history(run.id)] == [("started", "U1"), ("noted", "U2")]
