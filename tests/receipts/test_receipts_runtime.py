"""Receipts written at close, on the runtime: every outcome, the chain, and no run without its receipt.

Real Redis and RQ (an in-process SimpleWorker); answers go through `accept`, the path every host uses.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import agents_for_tests  # noqa: F401  (registers t-ask, t-each)
import pytest
from receipt_support import predicate, ring
from redis import Redis
from runtime_helpers import make_runtime, parked, paused, start, work

from workers.interaction import Answer
from workers.receipts import Signer
from workers.receipts.canonical import digest
from workers.receipts.keys import public_pem
from workers.receipts.verify import verify_envelope
from workers.runtime import admin
from workers.runtime.acceptance import AcceptRefused, accept
from workers.runtime.retention import purge_finished
from workers.runtime.sweep import sweep
from workers.runtime.wiring import Runtime
from workers.store import keys
from workers.store.receipts import ReceiptBook
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration
RED = [Answer(id="colour", choice="red")]


@pytest.fixture
def signer() -> Signer:
    return Signer.generate()


@pytest.fixture
def rt(r: Redis, tmp_path: Path, signer: Signer) -> Runtime:
    return make_runtime(r, tmp_path, receipt_key=signer.private_pem())


def test_an_answer_is_marked_for_its_receipt_in_the_close_and_signed_before_the_run_resumes(
    rt: Runtime, signer: Signer
) -> None:
    run_id, iid = parked(rt, "t-ask", {"assignees": ["U2"]})
    accept(rt, iid, "U2", RED)
    assert rt.redis.zscore(keys.receipts_pending(), iid) is not None  # marked by the closing script itself
    assert rt.receipts.get(iid) is None  # nothing signed on the answer's path
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    receipt = rt.receipts.get(iid)
    assert receipt is not None and rt.redis.zscore(keys.receipts_pending(), iid) is None
    p = predicate(receipt.line(), ring(signer))
    assert p["outcome"] == "answered" and p["answers"] == [{"item": "colour", "value": "red"}]
    assert p["who"]["user"] == "U2" and p["who"]["team"] == "T1" and "not a signature" in p["who"]["attests"]
    assert (p["question"]["id"], p["question"]["run_id"], p["workspace"]) == (iid, run_id, "T1")
    assert p["when"]["asked"] and p["when"]["closed"] and p["previous"] is None and p["sequence"] == 1


def test_a_refused_answer_marks_nothing(rt: Runtime) -> None:
    _, iid = parked(rt, "t-ask", {"assignees": ["U2"]})
    with pytest.raises(AcceptRefused):
        accept(rt, iid, "U9", RED)
    assert rt.redis.zcard(keys.receipts_pending()) == 0


def test_receipts_of_a_workspace_form_a_chain(rt: Runtime, signer: Signer) -> None:
    found = []
    for _ in range(3):
        _, iid = parked(rt, "t-ask", {})
        accept(rt, iid, "U1", RED)
        work(rt)
        receipt = rt.receipts.get(iid)
        assert receipt is not None
        found.append(receipt)
    keys_ = ring(signer)
    predicates = [predicate(r.line(), keys_) for r in found]
    assert [p["sequence"] for p in predicates] == [1, 2, 3]
    assert [p["previous"] for p in predicates] == [None, {"sha256": found[0].digest}, {"sha256": found[1].digest}]
    assert [r.interrupt_id for r in rt.receipts.chain("T1")] == [r.interrupt_id for r in found]


def test_an_expiry_and_a_cancel_each_get_a_receipt_from_the_sweep(rt: Runtime, signer: Signer) -> None:
    _, expiring = parked(rt, "t-ask", {"expires_in": 60, "catch": True})
    rt.redis.hset(keys.interrupt(expiring), "expires_at", "1")  # its deadline has passed
    rt.redis.zadd(keys.expiry_index(), {expiring: 1})
    cancelled_run, cancelled = parked(rt, "t-ask", {})
    admin.cancel(rt, cancelled_run, "UADMIN")
    report = sweep(rt)
    assert report.receipts == 2
    keys_ = ring(signer)
    expired = rt.receipts.get(expiring)
    gone = rt.receipts.get(cancelled)
    assert expired is not None and gone is not None
    assert predicate(expired.line(), keys_)["outcome"] == "expired"
    assert predicate(expired.line(), keys_)["who"]["user"] == "parley"
    cancel = predicate(gone.line(), keys_)
    assert (cancel["outcome"], cancel["who"]["user"], cancel["answers"]) == ("cancelled", "UADMIN", [])


def test_a_decline_by_the_person_asked_reads_declined(rt: Runtime, signer: Signer) -> None:
    from workers.runtime.decline import decline

    _, iid = parked(rt, "t-ask", {"assignees": ["U2"]})
    question = rt.store.interrupt(iid)
    assert question is not None
    assert decline(rt, question, "U2", team=None).ok
    receipt = rt.receipts.write(iid)
    assert receipt is not None and predicate(receipt.line(), ring(signer))["outcome"] == "declined"


def test_each_persons_answer_of_ask_each_has_its_own_receipt(rt: Runtime, signer: Signer) -> None:
    run_id = start(rt, "t-each", {"assignees": ["UA", "UB"]})
    work(rt)
    group = rt.store.groups.group(rt.store.get(run_id).interrupt)
    assert group is not None
    members = {q.assignees[0]: q.id for q in rt.store.groups.members(group)}
    accept(rt, members["UA"], "UA", RED)
    accept(rt, members["UB"], "UB", [Answer(id="colour", choice="green")])
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    found = rt.receipts.of_run(run_id)
    keys_ = ring(signer)
    said = {predicate(r.line(), keys_)["who"]["user"]: predicate(r.line(), keys_)["answers"] for r in found}
    assert said == {"UA": [{"item": "colour", "value": "red"}], "UB": [{"item": "colour", "value": "green"}]}


def test_without_a_key_nothing_is_signed_and_old_marks_are_forgotten(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path, retention=100.0)
    _, iid = parked(rt, "t-ask", {})
    accept(rt, iid, "U1", RED)
    work(rt)
    assert rt.receipts.get(iid) is None
    closed = rt.redis.zscore(keys.receipts_pending(), iid)
    assert closed is not None
    assert rt.receipts.sweep(closed + 50, keep_unsigned=100.0) == 0 and rt.receipts.pending(iid)
    rt.receipts.sweep(closed + 101, keep_unsigned=100.0)
    assert not rt.receipts.pending(iid)


def test_receipts_outlive_the_purge_of_their_run_and_expire_with_their_own_retention(
    r: Redis, tmp_path: Path, signer: Signer
) -> None:
    rt = make_runtime(r, tmp_path, receipt_key=signer.private_pem(), receipt_retention=3600.0)
    run_id, iid = parked(rt, "t-ask", {})
    accept(rt, iid, "U1", RED)
    work(rt)
    assert purge_finished(rt, older_than=0.0, now=time.time() + 1) == [run_id]
    assert not rt.redis.exists(keys.run(run_id), keys.interrupt(iid))
    assert rt.receipts.get(iid) is not None and [x.interrupt_id for x in rt.receipts.chain("T1")] == [iid]
    assert 3500 < rt.redis.ttl(keys.receipt(iid)) <= 3600


def test_rotation_old_and_new_receipts_both_verify(r: Redis, tmp_path: Path) -> None:
    old, new = Signer.generate(), Signer.generate()
    first = make_runtime(r, tmp_path, receipt_key=old.private_pem())
    _, before = parked(first, "t-ask", {})
    accept(first, before, "U1", RED)
    work(first)
    trusted = public_pem(old.public).encode()  # PARLEY_RECEIPT_KEYS: the rotated key, given out of band
    second = make_runtime(r, tmp_path, receipt_key=new.private_pem(), receipt_trusted=trusted)
    _, after = parked(second, "t-ask", {})
    accept(second, after, "U1", RED)
    work(second)
    published = second.receipts.keyring()  # the keys it was given, as GET /receipts/keys lists them
    assert len(published) == 2
    alone = make_runtime(r, tmp_path, receipt_key=new.private_pem())  # never trusts what Redis recorded
    assert len(alone.receipts.keyring()) == 1 and alone.receipts.recorded_keyids() == sorted([old.keyid, new.keyid])
    for iid in (before, after):
        receipt = second.receipts.get(iid)
        assert receipt is not None
        verify_envelope(receipt.envelope, published, receipt.digest)
    chain = [json.loads(json.dumps(r_.line())) for r_ in second.receipts.chain("T1")]
    assert [c["sequence"] for c in chain] == [1, 2]


def test_a_temporal_signal_carries_the_receipt_into_the_workflows_outcome(rt: Runtime, signer: Signer) -> None:
    from workers.integrations.temporal import QuestionOutcome
    from workers.questions.receipt_views import with_signal_receipt
    from workers.store.records import WebhookState

    run_id, iid = parked(rt, "t-ask", {})
    accept(rt, iid, "U1", RED)
    sent = {"question_id": run_id, "status": "answered", "answers": {"colour": "red"}, "by": "U1"}
    state = WebhookState(id=f"sig_{run_id}", event="answered", payload=json.dumps(sent))
    signed = with_signal_receipt(rt.receipts, run_id, state)  # the signal's worker, before its first attempt
    outcome = QuestionOutcome.of(json.loads(signed.payload))
    assert outcome.receipt is not None and outcome.answers == {"colour": "red"}
    assert predicate(outcome.receipt, ring(signer))["question"]["id"] == iid
    assert with_signal_receipt(rt.receipts, run_id, signed) == signed  # sent once as it was first signed


class WrittenMeanwhile(Redis):
    """A real Redis client: once its first read of `iid`'s receipt is answered (none yet), `other`
    writes that receipt, as the worker resuming the run does at the same moment."""

    def __init__(self, other: ReceiptBook, iid: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.other, self.iid, self.wrote = other, iid, False

    def execute_command(self, *args: Any, **options: Any) -> Any:
        answer = super().execute_command(*args, **options)
        if not self.wrote and list(args[:2]) == ["HGETALL", keys.receipt(self.iid)]:
            self.wrote = self.other.write(self.iid) is not None
        return answer


def test_a_receipt_another_writer_commits_between_the_reads_is_found_not_missed(rt: Runtime, signer: Signer) -> None:
    """The Temporal signal's worker reads the receipt as the resuming worker writes it: it still sends it."""
    run_id, iid = parked(rt, "t-ask", {})
    accept(rt, iid, "U1", RED)
    reader = WrittenMeanwhile(rt.receipts, iid, connection_pool=rt.redis.connection_pool)
    found = ReceiptBook(reader, signer).of_run(run_id)
    assert reader.wrote and rt.redis.zscore(keys.receipts_pending(), iid) is None
    assert found == [rt.receipts.get(iid)] and found[0].sequence == 1  # the one receipt, not a second


def test_inspect_and_parley_runs_show_name_each_receipts_digest(rt: Runtime, redis_url: str) -> None:
    from receipt_support import cli

    from bot.slack.blocks_inspect import inspect_view

    run_id, iid = parked(rt, "t-ask", {})
    accept(rt, iid, "U1", RED)
    work(rt)
    receipt = rt.receipts.get(iid)
    assert receipt is not None
    detail = admin.show(rt, run_id)
    assert detail.receipts == {iid: receipt.digest}
    assert f"sha256:{receipt.digest[:16]}" in json.dumps(inspect_view(detail))
    shown = cli("runs", "show", run_id, env={"REDIS_URL": redis_url})
    assert shown.returncode == 0, shown.stderr
    assert f"question {iid}: answered  sha256:{receipt.digest}  (T1 #1)" in shown.stdout


def test_numbers_past_two_to_the_53_are_stated_as_strings_and_every_close_gets_its_receipt(
    rt: Runtime, signer: Signer
) -> None:
    run_id, approval = parked(rt, "t-big")
    accept(rt, approval, "U1", [Answer(id="_decision", choice="approve")])
    work(rt)
    rows = paused(rt, run_id)
    accept(rt, rows, "U1", [Answer(id="n", number=10**17)])
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED  # neither receipt held its run back
    first, second = (rt.receipts.get(iid) for iid in (approval, rows))
    assert first is not None and second is not None and rt.redis.zcard(keys.receipts_pending()) == 0
    approved = predicate(first.line(), ring(signer))["approval"]
    assert approved["arguments_digest"] == digest({"order_id": 2**53 + 1}) == digest({"order_id": str(2**53 + 1)})
    assert predicate(second.line(), ring(signer))["answers"] == [{"item": "n", "value": str(10**17)}]


def test_an_answer_from_a_shared_channels_other_workspace_is_attested_as_that_workspaces(
    rt: Runtime, signer: Signer
) -> None:
    shared = {"channel": "CSHARED", "ts": "1700000000.000100"}

    def posted(iid: str) -> None:  # as the Slack host records the post
        rt.redis.hset(keys.interrupt(iid), "message", json.dumps(shared))

    _, iid = parked(rt, "t-ask", {"assignees": ["UEXT", "U1"]})
    posted(iid)
    accept(rt, iid, "UEXT", RED, team="T2", channel=shared["channel"], message_ts=shared["ts"])  # a partner
    work(rt)
    receipt = rt.receipts.get(iid)
    assert receipt is not None
    said = predicate(receipt.line(), ring(signer))
    assert (said["who"]["user"], said["who"]["team"], said["workspace"]) == ("UEXT", "T2", "T1")

    each = start(rt, "t-each", {"assignees": ["UA", "UB"]})
    work(rt)
    group = rt.store.groups.group(rt.store.get(each).interrupt)
    assert group is not None
    members = {q.assignees[0]: q.id for q in rt.store.groups.members(group)}
    for member in members.values():
        posted(member)
    accept(rt, members["UA"], "UA", RED, team="T2", channel=shared["channel"], message_ts=shared["ts"])
    accept(rt, members["UB"], "UB", RED, team="T1", channel=shared["channel"], message_ts=shared["ts"])
    work(rt)
    teams = {
        predicate(r.line(), ring(signer))["who"]["user"]: predicate(r.line(), ring(signer))["who"]["team"]
        for r in rt.receipts.of_run(each)
    }
    assert teams == {"UA": "T2", "UB": "T1"}
    assert not rt.redis.hexists(keys.interrupt(members["UB"]), "answered_team")  # kept only where it differs
