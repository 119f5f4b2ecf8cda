"""`parley receipts keygen|verify`, `parley audit export|verify` and the documented snippet, as people run them.

Receipts come from real closes on the runtime (real Redis, an in-process RQ worker); the
commands run as subprocesses. Every tampering below must turn an `ok:` into a `bad:` line.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import agents_for_tests  # noqa: F401  (registers t-ask)
import pytest
from receipt_support import cli, key_files, run_snippet, write
from redis import Redis
from runtime_helpers import make_runtime, parked, work

from workers.interaction import Answer
from workers.receipts import Signer
from workers.receipts.canonical import canonical, sha256
from workers.receipts.dsse import sign
from workers.runtime.acceptance import accept
from workers.runtime.wiring import Runtime

pytestmark = pytest.mark.integration


def answered(rt: Runtime, colour: str = "red") -> dict[str, Any]:
    """Ask, answer and resume one question; its receipt as the API gives it."""
    _, iid = parked(rt, "t-ask", {})
    accept(rt, iid, "U1", [Answer(id="colour", choice=colour)])
    work(rt)
    receipt = rt.receipts.get(iid)
    assert receipt is not None
    return receipt.line()


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Signer, Path, Path]:
    return key_files(tmp_path)


@pytest.fixture
def rt(r: Redis, tmp_path: Path, keys: tuple[Signer, Path, Path]) -> Runtime:
    return make_runtime(r, tmp_path, receipt_key=keys[0].private_pem())


def edited_payload(line: dict[str, Any], change: Any) -> dict[str, Any]:
    """`line` with its statement changed by `change` and re-encoded (its signature left as it was)."""
    envelope = dict(line["envelope"])
    statement = json.loads(base64.b64decode(envelope["payload"]))
    change(statement)
    envelope["payload"] = base64.b64encode(canonical(statement)).decode()
    return {**line, "envelope": envelope}


def test_keygen_writes_a_private_key_and_refuses_to_overwrite_it(tmp_path: Path) -> None:
    out = tmp_path / "k.pem"
    made = cli("receipts", "keygen", "--out", str(out))
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == f"export PARLEY_RECEIPT_KEY={out.resolve()}"
    assert oct(out.stat().st_mode & 0o777) == "0o600" and (tmp_path / "k.pub.pem").exists()
    Signer.from_pem(out.read_bytes())
    again = cli("receipts", "keygen", "--out", str(out))
    assert again.returncode == 2 and "exists" in again.stderr


def test_a_receipt_verifies_with_the_cli_and_the_documented_snippet(
    rt: Runtime, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    _, _, public = keys
    path = write(tmp_path / "receipt.json", answered(rt))
    ok = cli("receipts", "verify", str(path), "--keys", str(public))
    assert ok.returncode == 0 and ok.stdout.startswith("ok: receipt ") and "answered by U1" in ok.stdout, ok
    snippet = run_snippet(path, public)
    assert snippet.returncode == 0 and snippet.stdout.strip() == "verified: answered by U1", snippet.stderr


@pytest.mark.parametrize("where", ["payload", "signature", "digest"])
def test_changing_any_byte_of_a_receipt_fails_verification(
    rt: Runtime, keys: tuple[Signer, Path, Path], tmp_path: Path, where: str
) -> None:
    _, _, public = keys
    line = answered(rt)
    if where == "payload":
        raw = bytearray(base64.b64decode(line["envelope"]["payload"]))
        raw[raw.index(b"red")] = ord("b")  # "red" -> "bed"
        line["envelope"]["payload"] = base64.b64encode(bytes(raw)).decode()
    elif where == "signature":
        sig = bytearray(base64.b64decode(line["envelope"]["signatures"][0]["sig"]))
        sig[0] ^= 1
        line["envelope"]["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    else:
        line["digest"]["sha256"] = "0" * 64
    path = write(tmp_path / "receipt.json", line)
    bad = cli("receipts", "verify", str(path), "--keys", str(public))
    assert bad.returncode == 1 and bad.stdout.startswith("bad: ") and "Traceback" not in bad.stderr, bad
    assert run_snippet(path, public).returncode != 0


def test_bad_input_gets_one_line_verdicts_never_a_traceback(
    rt: Runtime, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    _, _, public = keys
    _, _, other = key_files(tmp_path, "other")
    good = write(tmp_path / "receipt.json", answered(rt))
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    cases = {
        "does not parse": cli("receipts", "verify", str(garbage), "--keys", str(public)),
        "unknown key id": cli("receipts", "verify", str(good), "--keys", str(other)),
        "cannot read": cli("receipts", "verify", str(tmp_path / "missing.json"), "--keys", str(public)),
        "no PEM public key": cli("receipts", "verify", str(good), "--keys", str(garbage)),
    }
    for words, done in cases.items():
        assert done.returncode == 1, (words, done)
        assert done.stdout.startswith("bad: ") and words in done.stdout and len(done.stdout.splitlines()) == 1, done
        assert "Traceback" not in done.stderr
    nokeys = cli("receipts", "verify", str(good), env={"PARLEY_RECEIPT_KEY": ""})
    assert nokeys.returncode == 1 and "no keys to verify with" in nokeys.stdout


def test_a_receipt_copied_onto_another_question_or_an_empty_body_is_bad(
    rt: Runtime, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    _, _, public = keys
    mine, theirs = answered(rt, "red"), answered(rt, "green")
    copied = {**theirs, "question_id": mine["question_id"], "run_id": mine["run_id"]}  # served as mine
    for name, body in {"copied": copied, "grouped": {"receipts": [copied]}}.items():
        done = cli("receipts", "verify", str(write(tmp_path / f"{name}.json", body)), "--keys", str(public))
        assert done.returncode == 1 and done.stdout.startswith("bad: question_id"), done
        assert run_snippet(tmp_path / f"{name}.json", public).returncode != 0
    empty = cli("receipts", "verify", str(write(tmp_path / "empty.json", {"receipts": []})), "--keys", str(public))
    assert empty.returncode == 1 and empty.stdout.startswith("bad: no receipts"), empty


@pytest.fixture
def audit(rt: Runtime, redis_url: str, tmp_path: Path) -> list[str]:
    """Four receipts of workspace T1, exported with `parley audit export`."""
    for colour in ("red", "green", "red", "green"):
        answered(rt, colour)
    done = cli("audit", "export", "--team", "T1", env={"REDIS_URL": redis_url})
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def verify_log(lines: list[str], tmp_path: Path, public: Path) -> tuple[int, str]:
    path = tmp_path / "audit.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = cli("audit", "verify", str(path), "--keys", str(public))
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout.strip()


def test_an_exported_audit_log_verifies(audit: list[str], keys: tuple[Signer, Path, Path], tmp_path: Path) -> None:
    assert [json.loads(x)["sequence"] for x in audit] == [1, 2, 3, 4]
    assert verify_log(audit, tmp_path, keys[2]) == (0, "ok: 4 receipts verified, every chain intact")


def test_audit_verify_names_a_deleted_line(audit: list[str], keys: tuple[Signer, Path, Path], tmp_path: Path) -> None:
    code, said = verify_log(audit[:1] + audit[2:], tmp_path, keys[2])
    assert code == 1 and said.startswith("bad: line 2: chain broken"), said


def test_audit_verify_names_a_reordered_pair(audit: list[str], keys: tuple[Signer, Path, Path], tmp_path: Path) -> None:
    code, said = verify_log([audit[0], audit[2], audit[1], audit[3]], tmp_path, keys[2])
    assert code == 1 and said.startswith("bad: line 2: "), said


@pytest.mark.parametrize(("field", "value"), [("question_id", "q-other"), ("run_id", "r-other"), ("sequence", 9)])
def test_audit_verify_names_a_line_saying_other_than_its_signature(
    audit: list[str], keys: tuple[Signer, Path, Path], tmp_path: Path, field: str, value: Any
) -> None:
    edited = {**json.loads(audit[1]), field: value}
    code, said = verify_log([audit[0], json.dumps(edited), *audit[2:]], tmp_path, keys[2])
    assert code == 1 and said.startswith(f"bad: line 2: {field}"), said


def test_audit_verify_names_an_edited_answer(audit: list[str], keys: tuple[Signer, Path, Path], tmp_path: Path) -> None:
    def green(statement: dict[str, Any]) -> None:
        statement["predicate"]["answers"][0]["value"] = "blue"

    edited = edited_payload(json.loads(audit[2]), green)
    code, said = verify_log([*audit[:2], json.dumps(edited), audit[3]], tmp_path, keys[2])
    assert code == 1 and said.startswith("bad: line 3: bad signature"), said


def test_audit_verify_names_an_inserted_receipt_forged_with_another_key(
    audit: list[str], keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    """The forgery links into the chain perfectly; only its key gives it away."""
    second = json.loads(audit[1])
    statement = json.loads(base64.b64decode(second["envelope"]["payload"]))
    statement["predicate"]["answers"][0]["value"] = "blue"
    payload = canonical(statement)
    forged = {**second, "digest": {"sha256": sha256(payload)}, "envelope": sign(payload, Signer.generate())}
    code, said = verify_log([audit[0], json.dumps(forged), *audit[2:]], tmp_path, keys[2])
    assert code == 1 and said.startswith("bad: line 2: unknown key id"), said


def test_audit_verify_names_a_fork(audit: list[str], keys: tuple[Signer, Path, Path], tmp_path: Path) -> None:
    code, said = verify_log([*audit, audit[2]], tmp_path, keys[2])
    assert code == 1 and said.startswith("bad: line 5: "), said


def test_a_receipt_deleted_in_redis_shows_as_a_gap_and_a_listless_chain_is_still_exported(
    audit: list[str], rt: Runtime, redis_url: str, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    second = json.loads(audit[1])["question_id"]
    rt.redis.delete(f"parley:receipt:{second}")  # someone with Redis deletes receipt 2
    rt.redis.srem("parley:receipts:workspaces", "T1")  # and the chain's name from the list
    done = cli("audit", "export", env={"REDIS_URL": redis_url})
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 3, done.stderr
    code, said = verify_log(done.stdout.splitlines(), tmp_path, keys[2])
    assert code == 1 and said.startswith("bad: line 2: chain broken"), said
    assert rt.redis.zcard("parley:receipts:chain:T1") == 4  # the export read it, and left its index whole


def test_a_chain_whose_head_pointer_was_deleted_goes_on_after_its_newest_receipt(
    audit: list[str], rt: Runtime, redis_url: str, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    rt.redis.delete("parley:receipts:head:T1")
    assert answered(rt, "red")["sequence"] == 5  # not 1: that would fork the chain
    done = cli("audit", "export", "--team", "T1", env={"REDIS_URL": redis_url})
    assert verify_log(done.stdout.splitlines(), tmp_path, keys[2]) == (0, "ok: 5 receipts verified, every chain intact")


def test_with_min_replicas_a_chain_whose_newest_receipt_is_gone_is_not_exported_as_empty(
    audit: list[str], rt: Runtime, redis_url: str
) -> None:
    rt.redis.delete(f"parley:receipt:{json.loads(audit[-1])['question_id']}")  # no replica holds the rest
    done = cli("audit", "export", "--team", "T1", env={"REDIS_URL": redis_url, "PARLEY_REDIS_MIN_REPLICAS": "1"})
    assert done.returncode == 1 and done.stdout == "" and "not yet on 1 replica" in done.stderr, done


def test_audit_export_since_keeps_the_later_receipts(rt: Runtime, redis_url: str) -> None:
    answered(rt)
    env = {"REDIS_URL": redis_url}
    assert len(cli("audit", "export", "--since", "1h", env=env).stdout.splitlines()) == 1
    assert cli("audit", "export", "--since", "2999-01-01", env=env).stdout == ""
    bad = cli("audit", "export", "--since", "someday", env=env)
    assert bad.returncode == 2 and "--since" in bad.stderr and "Traceback" not in bad.stderr


def test_parley_dev_makes_its_receipt_key_once_in_the_data_folder(tmp_path: Path) -> None:
    from parley.dev_receipts import playground_receipt_key

    first = playground_receipt_key(tmp_path / "data")
    again = playground_receipt_key(tmp_path / "data")
    assert first == again == tmp_path / "data" / "receipt-key.pem"
    assert oct(first.stat().st_mode & 0o777) == "0o600"
    assert Signer.from_pem(first.read_bytes()).keyid == Signer.from_pem(again.read_bytes()).keyid
