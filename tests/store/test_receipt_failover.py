"""Receipts through a Redis failover: what async replication can lose, and what Parley promises.

A private master and one replica on loopback. The close and its receipt's mark reach the
replica before the answer is acked (`PARLEY_REDIS_MIN_REPLICAS=1`); the receipt is signed
later. Promoting the replica (`REPLICAOF NO ONE`, as Sentinel does) before the old master takes
a receipt stands for a failover in the moment after the receipt was written: the old master
has it, the new one never will. The new master's sweep writes it again from its mark. A
receipt is handed out only once a replica holds it, so no copy given out is lost; a process
that wrote a receipt later lost reports the chain gone back, and `parley audit verify` shows
a copy from before the loss as a fork, never silently.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import agents_for_tests  # noqa: F401  (registers t-ask)
import pytest
import redis
from prometheus_client import REGISTRY
from receipt_invariants import audit_violations, chain_violations, question_violations, states
from receipt_support import cli, ring
from redis_servers import Topology, frozen, have_redis_server, promote
from runtime_helpers import make_runtime, parked

from workers.interaction import Answer
from workers.questions.receipt_views import receipt_body, receipt_meta
from workers.receipts import Signer
from workers.receipts.export import export_lines
from workers.receipts.keys import public_pem
from workers.runtime.acceptance import accept
from workers.runtime.wiring import Runtime
from workers.store import keys
from workers.store.receipt_replicas import ReceiptUnconfirmed
from workers.store.receipts import ReceiptBook

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server (.ci/run installs it)"),
]

ASSIGNEES = {"assignees": ["U1", "U2"]}
COLOURS = ["red", "green"]


@pytest.fixture
def signer() -> Signer:
    return Signer.generate()


def runtime_on(client: redis.Redis, tmp_path: Path, signer: Signer, min_replicas: int = 1) -> Runtime:
    return make_runtime(client, tmp_path, min_replicas=min_replicas, receipt_key=signer.private_pem())


def answered(rt: Runtime, n: int) -> list[tuple[str, str]]:
    """`n` runs parked on their question, each answered by U1 and acked: the close is on the replica."""
    runs = [parked(rt, "t-ask", ASSIGNEES) for _ in range(n)]
    for k, (_, iid) in enumerate(runs):
        accept(rt, iid, "U1", [Answer(id="colour", choice=COLOURS[k % 2])], token=f"U1:click-{k}")
    return runs


def violations(r: redis.Redis, iids: list[str], signer: Signer) -> list[str]:
    """The receipts' invariant, as the fault suite checks it, on `r`."""
    found = question_violations(r, states(r, iids), "failover", timeout=0)
    return found + chain_violations(r) + audit_violations(r, ring(signer))


def test_a_receipt_the_failover_lost_is_written_again_from_its_mark_and_none_lost_was_handed_out(
    pair: Topology, master: redis.Redis, tmp_path: Path, signer: Signer
) -> None:
    rt = runtime_on(master, tmp_path, signer)
    (run1, q1), (run2, q2) = answered(rt, 2)
    [given] = rt.receipts.issued(run1)  # written, and handed out once the replica holds it
    new_master = promote(pair).client()
    # The old master takes q2's receipt after its replica stopped following: async replication's loss.
    lost = rt.receipts.write(q2)
    assert lost is not None and master.exists(keys.receipt(q2))
    with pytest.raises(ReceiptUnconfirmed):
        rt.receipts.issued(run2)  # no replica holds it: not handed out (the API answers 409)
    with pytest.raises(ReceiptUnconfirmed):
        receipt_body(rt.receipts, run2)  # nor sent with a webhook, a Temporal signal or over MCP
    assert receipt_meta(rt.receipts, run2) is None  # nor forwarded by the gateway
    assert pair.master is not None
    pair.master.kill()

    # The promoted replica holds both closes and q2's mark, not q2's receipt: the check says so ...
    assert new_master.zscore(keys.receipts_pending(), q2) is not None
    assert violations(new_master, [q1, q2], signer) == [f"failover: question {q2} is answered without its receipt"]
    # ... until the sweep writes it from the mark: the same receipt, at the same place.
    rt2 = runtime_on(new_master, tmp_path, signer, min_replicas=0)
    assert rt2.receipts.sweep(time.time(), 0) == 1
    assert violations(new_master, [q1, q2], signer) == []
    again = rt2.receipts.get(q2)
    assert again is not None and (again.sequence, again.digest) == (lost.sequence, lost.digest)
    kept = rt2.receipts.get(q1)
    assert kept is not None and kept.digest == given.digest  # the receipt handed out survived
    assert rt2.receipts.rewinds() == []  # nobody held a receipt that changed


def test_a_chain_that_went_back_is_reported_and_a_copy_from_before_shows_as_a_fork(
    pair: Topology, master: redis.Redis, tmp_path: Path, signer: Signer
) -> None:
    rt = runtime_on(master, tmp_path, signer)
    (run1, _), (_, q2), (_, q3) = answered(rt, 3)
    rt.receipts.issued(run1)
    new_master = promote(pair).client()
    # On the old master q3's receipt is written before q2's (another worker was quicker), and,
    # without the wait for replicas, an export hands them out: q2's is #3 there.
    assert rt.receipts.write(q3) is not None and rt.receipts.write(q2) is not None
    before = list(export_lines(ReceiptBook(master)))
    assert [json.loads(line)["sequence"] for line in before] == [1, 2, 3]
    assert pair.master is not None
    pair.master.kill()

    # The same process now reaches the promoted replica. Its sweep writes q2 then q3 (closed in
    # that order): #2 and #3 now, other receipts than the lost ones at those places.
    rt2 = runtime_on(new_master, tmp_path, signer, min_replicas=0)
    rt2.receipts.heads = rt.receipts.heads  # the process's memory of what it wrote
    rewinds = REGISTRY.get_sample_value("parley_receipt_chain_rewinds_total") or 0.0
    assert rt2.receipts.sweep(time.time(), 0) == 2
    assert REGISTRY.get_sample_value("parley_receipt_chain_rewinds_total") == rewinds + 1  # counted, for alerts
    assert violations(new_master, [q2, q3], signer) == []  # the chain in Redis is whole
    [note] = rt2.receipts.rewinds()
    assert (note["lost_sequence"], note["lost_question"], note["head_sequence"]) == (3, q2, 1)

    env = {"REDIS_URL": f"redis://127.0.0.1:{pair.replica_servers[0].port}/0", "PARLEY_REDIS_MIN_REPLICAS": "0"}
    exported = cli("audit", "export", env=env)
    assert exported.returncode == 0, exported.stderr
    assert f"behind receipt #3 (question {q2}" in exported.stderr  # reported with every export
    after = exported.stdout.splitlines()
    assert [json.loads(line)["sequence"] for line in after] == [1, 2, 3]
    assert before[0] == after[0] and before[1:] != after[1:]

    # A copy of the old #3 checked against the log after the failover: a fork, named by its line.
    keys_file = tmp_path / "keys.pem"
    keys_file.write_text(public_pem(signer.public))
    log = tmp_path / "audit.jsonl"
    log.write_text("\n".join([*after, before[2]]) + "\n")
    verdict = cli("audit", "verify", str(log), "--keys", str(keys_file))
    assert verdict.returncode == 1 and verdict.stdout.startswith("bad: line 4: out of order or forked"), verdict


def test_an_export_waits_for_a_replica_to_hold_the_chain(
    pair: Topology, master: redis.Redis, tmp_path: Path, signer: Signer
) -> None:
    rt = runtime_on(master, tmp_path, signer)
    [(run1, _)] = answered(rt, 1)
    rt.receipts.issued(run1)
    assert pair.master is not None
    env = {"REDIS_URL": f"redis://127.0.0.1:{pair.master.port}/0", "PARLEY_REDIS_MIN_REPLICAS": "1"}
    with frozen(pair):
        [(_, q2)] = answered(runtime_on(master, tmp_path, signer, min_replicas=0), 1)
        assert rt.receipts.write(q2) is not None  # the head now: the frozen replica does not confirm it
        refused = cli("audit", "export", env=env)
        assert refused.returncode == 1 and refused.stdout == ""
        assert "not yet on 1 replica(s); export again in a moment" in refused.stderr
    exported = cli("audit", "export", env=env)
    assert exported.returncode == 0, exported.stderr
    assert [json.loads(line)["question_id"] for line in exported.stdout.splitlines()][-1] == q2
