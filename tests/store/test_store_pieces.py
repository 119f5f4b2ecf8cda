"""Long hash values are kept in pieces so Redis keeps a question's hash compact by default,
and a question written whole by an earlier version still reads, answers and resumes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from redis import Redis
from runtime_helpers import parked, runtime_and_host, work

from workers.interaction import Answer, Item, ItemType, Request
from workers.runtime.acceptance import accept
from workers.store import keys
from workers.store.pieces import PIECE, gathered, spread
from workers.store.questions import QuestionStore
from workers.store.records import ApiQuestionRecord, InterruptRecord, RunStatus


@pytest.mark.unit
def test_a_short_value_stays_one_field_and_a_long_one_comes_back_whole() -> None:
    assert spread("request", "{}") == {"request": "{}"}
    text = "ünïcödé 🚀 " * 40
    pieces = spread("request", text)
    assert len(pieces) > 1 and all(len(v.encode()) <= PIECE for v in pieces.values())
    assert list(pieces) == [f"request#{i}" for i in range(len(pieces))]
    assert gathered(pieces, "request") == text
    assert gathered({}, "request") is None


@pytest.mark.unit
def test_a_field_written_whole_wins_over_pieces() -> None:
    data = {**spread("request", "x" * 200), "request": "whole"}
    assert gathered(data, "request") == "whole"


def _long_request() -> Request:
    return Request(
        reason="Ship the release to every region, with notes? " * 3,
        items=[Item(id="go", text="Go", type=ItemType.SELECT, options=["yes", "no"])],
    )


@pytest.mark.integration
def test_a_question_hash_stays_a_listpack_with_redis_defaults(r: Redis, tmp_path: Path) -> None:
    limits = r.config_get("hash-max-*-value")  # Redis 7 names it listpack; the embedded 6.x, ziplist
    if int(limits.get("hash-max-listpack-value", limits.get("hash-max-ziplist-value", 0))) != PIECE:
        pytest.skip("this Redis does not run the default hash-max-listpack-value")
    rt, _ = runtime_and_host(r, tmp_path)
    _, iid = parked(rt, "t-ask")
    assert r.object("encoding", keys.interrupt(iid)) == b"listpack"
    assert rt.store.interrupt(iid) is not None


@pytest.mark.integration
def test_a_question_written_whole_by_the_previous_version_answers_and_resumes(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id, iid = parked(rt, "t-ask")
    key = keys.interrupt(iid)
    stored = {k.decode(): v.decode() for k, v in r.hgetall(key).items()}
    kept = gathered(stored, "request")
    assert kept is not None
    whole = Request.model_validate_json(kept).model_dump_json()  # with its nulls, as before
    r.hdel(key, *[k for k in stored if k.startswith("request#")])
    r.hset(key, "request", whole)  # as the previous version wrote it: one field
    r.hset(key, "message", json.dumps(json.loads(stored["message"])))  # and its message with spaces

    before = rt.store.interrupt(iid)
    assert before is not None and before.request.model_dump_json() == whole
    accept(rt, iid, "U1", [Answer(id="colour", choice="green")])
    work(rt)

    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert host.finals == [(run_id, "colour green")]


@pytest.mark.integration
def test_an_api_question_written_whole_by_the_previous_version_still_reads(r: Redis) -> None:
    record = ApiQuestionRecord(
        id="rOLDFORMAT0000000",
        token="ci",
        channel="C1",
        request=_long_request(),
        context={"service": "api", "notes": "n" * 150},
        metadata={"pipeline": 8812, "why": "w" * 100},
        created_at=time.time(),
    )
    old = {
        **{k: v for k, v in record.to_hash().items() if "#" not in k},
        "request": record.request.model_dump_json(),
        "context": json.dumps(record.context),
        "metadata": json.dumps(record.metadata),
    }
    r.hset(keys.api_question(record.id), mapping=old)
    assert QuestionStore(r).get(record.id) == record
    r.delete(keys.api_question(record.id))
    r.hset(keys.api_question(record.id), mapping=record.to_hash())
    assert any("#" in k for k in record.to_hash())
    assert QuestionStore(r).get(record.id) == record


@pytest.mark.unit
def test_an_interrupt_in_pieces_reads_as_one_written_whole() -> None:
    request = _long_request()
    base = {"id": "q1", "run_id": "r1", "key": "#1", "attempt": "1", "assignees": "[]", "asked_at": "1.0"}
    base["state"] = "open"
    whole = InterruptRecord.from_hash({**base, "request": request.model_dump_json()})
    pieces = InterruptRecord.from_hash({**base, **spread("request", request.model_dump_json())})
    assert whole == pieces and pieces.request == request


THREAD = {"host": "slack", "team": "T0PARLEY", "channel": "C0GENERAL", "thread_ts": "1796448920.098122"}


@pytest.mark.integration
def test_a_long_conversation_is_written_in_pieces_and_a_finished_run_still_purges(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1"})
    rt.store.set_thread(run.id, THREAD)
    stored = {k.decode(): v.decode() for k, v in r.hgetall(keys.run(run.id)).items()}
    assert "conversation" not in stored and "conversation#1" in stored
    assert rt.store.get(run.id).conversation == THREAD and rt.store.conversation(run.id) == THREAD
    assert rt.store.thread_run(THREAD["channel"], THREAD["thread_ts"]) == run.id
    rt.store.transition(run.id, [RunStatus.QUEUED], RunStatus.CANCELLED)

    purged = rt.store.retention.purge_many([run.id], time.time() + 60)  # the sweep's batch: pieces read together
    assert [p.run_id for p in purged] == [run.id]
    assert not r.exists(keys.run(run.id))
    assert rt.store.thread_run(THREAD["channel"], THREAD["thread_ts"]) is None


@pytest.mark.integration
def test_a_conversation_written_whole_by_the_previous_version_reads_moves_and_purges(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run = rt.store.create("t-ask", "", "U1", {"host": "test", "team": "T1"})
    r.hset(keys.run(run.id), "conversation", json.dumps(THREAD))  # as the previous version wrote it
    r.set(keys.thread(THREAD["channel"], THREAD["thread_ts"]), run.id)
    assert rt.store.get(run.id).conversation == THREAD and rt.store.conversation(run.id) == THREAD

    moved = {**THREAD, "thread_ts": "1796448999.000001"}
    rt.store.set_thread(run.id, moved)  # a rewrite leaves no whole field behind to win over the pieces
    assert rt.store.get(run.id).conversation == moved
    assert "conversation" not in {k.decode() for k in r.hkeys(keys.run(run.id))}
    rt.store.transition(run.id, [RunStatus.QUEUED], RunStatus.CANCELLED)
    purged = rt.store.retention.purge_many([run.id], time.time() + 60)  # the sweep's batch: pieces read together
    assert [p.run_id for p in purged] == [run.id]
    assert not r.exists(keys.run(run.id))


@pytest.mark.unit
def test_a_request_kept_without_its_nulls_reads_back_the_same() -> None:
    from workers.interaction.models import STORED
    from workers.store.records import stored_request

    choices = ["a", "b"]
    items = [
        Item(
            id=f"i{n}", text=t.value, type=t, options=choices if t in (ItemType.SELECT, ItemType.MULTI_SELECT) else None
        )
        for n, t in enumerate(ItemType)
    ]
    request = Request(reason="Everything at once?", items=items[:10], assignees=["U1"], expires_in=60)
    kept = stored_request(request)
    assert "null" not in kept and len(kept) < len(request.model_dump_json())
    assert Request.model_validate_json(kept, context=STORED) == request


@pytest.mark.unit
def test_a_request_kept_without_its_defaults_reads_back_the_same() -> None:
    from workers.interaction.models import STORED, Approval, Option
    from workers.store.records import stored_request

    labelled = [Option(value="eu", label="Europe"), Option(value="us", label="us", description="the US")]
    items = [
        Item(id="_decision", text="Decision", type=ItemType.SELECT, options=["approve", "reject"]),
        Item(id="where", text="Where", type=ItemType.MULTI_SELECT, options=[*labelled, "ap"], required=False),
        Item(id="n", text="How many", type=ItemType.NUMBER, min=0, max=9, integer=True, default=0),
        Item(id="ok", text="Sure?", type=ItemType.BOOLEAN, default=False),
        Item(id="why", text="Why", type=ItemType.FREE_TEXT, multiline=True, max_length=200, placeholder=""),
    ]
    approval = Approval(action="deploy", args={"n": 0, "gone": None, "flags": [False]}, editable=["n"])
    asked = [
        Request(reason="Plain?", items=items[:1]),
        Request(
            reason="Everything?",
            items=items,
            assignees=["U1", "S2"],
            expires_in=3600,
            on_expiry="use_defaults",
            show_answers=True,
            escalate_after=60,
            escalate_to=["U3"],
            last_call=0,
            claim=True,
            approval=approval,
        ),
    ]
    for request in asked:
        kept = stored_request(request)
        assert Request.model_validate_json(kept, context=STORED) == request, kept
    plain = stored_request(asked[0])
    assert plain == '{"reason":"Plain?","items":[{"id":"_decision","text":"Decision","type":"select",' + (
        '"options":["approve","reject"]}]}'
    )
