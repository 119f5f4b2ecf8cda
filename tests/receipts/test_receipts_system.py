"""Receipts end to end, beyond each outcome: a secret leaves no trace, and the keys are published.

A live `parley serve`, a real `parley worker`, the Web API stand-in and Slack's payloads.
Every outcome through every surface is test_receipts_every_surface.py's.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_support import Token, create_token
from receipt_support import cli, key_files, run_snippet, write
from receipt_surfaces import api_client, fill_modal, message_with
from slack_stack import SlackStack
from stacks import Stacks

from workers.receipts import KeyRing, Signer
from workers.receipts.canonical import digest
from workers.receipts.keys import public_pem
from workers.receipts.verify import verify_text

pytestmark = pytest.mark.system

CHANNEL = "C0GENERAL"
USER = "U0CAROL"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Signer, Path, Path]:
    return key_files(tmp_path_factory.mktemp("receipt-keys"))


@pytest.fixture(scope="module")
def stack(redis_url: str, keys: tuple[Signer, Path, Path], stacks: Stacks) -> SlackStack:
    env = {
        "PARLEY_RECEIPT_KEY": str(keys[1]),
        "PARLEY_SECRET_KEY": base64.urlsafe_b64encode(b"k" * 32).decode(),
        "PARLEY_API_RATE_LIMIT": "100000",
    }
    return stacks(redis_url=redis_url, workers=1, extra_env=env)


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "receipts")


def receipt_of(client: httpx.Client, qid: str, stack: SlackStack) -> dict[str, Any]:
    def closed() -> bool:  # a long-poll wakes on each close
        return client.get(f"/questions/{qid}", params={"wait": 5}).json()["status"] != "waiting"

    stack.wait_for("the question to close", closed, timeout=30)
    got = stack.wait_for("the receipt", lambda: (r := client.get(f"/questions/{qid}/receipt")).status_code == 200 and r)
    body: dict[str, Any] = got.json()
    return body


def verified_everywhere(receipt: dict[str, Any], keys: tuple[Signer, Path, Path], tmp_path: Path) -> dict[str, Any]:
    """Check `receipt` with the CLI and the documented snippet; its predicate."""
    path = write(tmp_path / f"{receipt['question_id']}-{receipt['sequence']}.json", receipt)
    done = cli("receipts", "verify", str(path), "--keys", str(keys[2]))
    assert done.returncode == 0 and done.stdout.startswith("ok: "), (done.stdout, done.stderr)
    snippet = run_snippet(path, keys[2])
    assert snippet.returncode == 0 and snippet.stdout.startswith("verified: "), snippet.stderr
    return verify_text(json.dumps(receipt), KeyRing([keys[0].public])).predicate


def test_a_secret_answer_leaves_no_trace_in_any_receipt(
    stack: SlackStack, token: Token, keys: tuple[Signer, Path, Path], tmp_path: Path
) -> None:
    secret = "hunter2-" + base64.b16encode(b"receipts").decode()
    items = [
        {"id": "token", "text": "Deploy token", "type": "secret"},
        {"id": "env", "text": "Environment", "type": "free_text"},
    ]
    with api_client(stack, token) as client:
        created = client.post("/questions", json={"request": {"reason": "Token?", "items": items}, "channel": CHANNEL})
        question = created.json()
        message = message_with(stack, "Token?", "parley_open_form")
        fill_modal(stack, message, "parley_open_form", USER, {"Deploy token": secret, "Environment": "prod"})
        found = receipt_of(client, question["id"], stack)
    p = verified_everywhere(found, keys, tmp_path)
    assert p["answers"] == [
        {"item": "token", "secret": True, "answered": True},
        {"item": "env", "value": "prod"},
    ]
    raw = secret.encode()
    traces = {
        secret,
        hashlib.sha256(raw).hexdigest(),
        hashlib.sha512(raw).hexdigest(),
        hashlib.sha1(raw).hexdigest(),
        hashlib.md5(raw).hexdigest(),
        base64.b64encode(hashlib.sha256(raw).digest()).decode(),
        base64.b64encode(raw).decode(),
        digest(secret)["sha256"],
    }
    whole = json.dumps(found) + base64.b64decode(found["envelope"]["payload"]).decode()
    assert [t for t in traces if t in whole] == []
    audit = cli("audit", "export", env={"REDIS_URL": stack.redis_url})
    assert audit.returncode == 0 and not [t for t in traces if t in audit.stdout]
    for line in audit.stdout.splitlines():
        payload = base64.b64decode(json.loads(line)["envelope"]["payload"]).decode()
        assert not [t for t in traces if t in payload]


def test_the_keys_endpoint_publishes_the_signing_key_and_others_see_no_receipt(
    stack: SlackStack, token: Token, keys: tuple[Signer, Path, Path]
) -> None:
    other = create_token(stack, "someone-else")
    request = {"reason": "Ok?", "items": [{"id": "ok", "text": "OK", "type": "boolean"}]}
    assert stack.redis is not None
    planted = Signer.generate()  # a key written into Redis by someone who can write Redis
    stack.redis.hset("parley:receipts:keys", planted.keyid, public_pem(planted.public))
    with api_client(stack, token) as client:
        published = client.get("/receipts/keys").json()
        created = client.post("/questions", json={"request": request, "channel": CHANNEL}).json()
        client.post(f"/questions/{created['id']}/cancel")
        receipt_of(client, created["id"], stack)
    assert published["current"] == keys[0].keyid
    assert [k["keyid"] for k in published["keys"]] == [keys[0].keyid]  # never the planted one
    assert published["unconfigured"] == [planted.keyid]  # named, so an operator sees it
    with api_client(stack, other) as client:
        assert client.get(f"/questions/{created['id']}/receipt").status_code == 404
