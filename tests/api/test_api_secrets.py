"""Secret answers to API questions, end to end: a live `parley serve`, a real `parley worker`, the Web API
stand-in, and a Redis of the test's own that writes an append-only file.

A question with a secret item is asked over `/api/v1` and answered in its form with Slack's signed
payloads. The secret is then looked for everywhere it must not be: every Redis value, the AOF on disk,
every Web API body the stand-in received (Inspect's modal among them), `parley runs show`, the webhook,
the listings and the processes' logs. Only the token that asked reads it, once.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from api_support import PARLEY, Receiver, Token, create_token
from cryptography.fernet import Fernet
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from redis_servers import data_server, have_redis_server, scratch_dir
from secret_support import bodies_holding, keys_holding, redis_values
from slack_forms import button_action, find_element, form_state
from slack_payloads import ADMIN, block_actions_payload, home_actions_payload, view_submission_payload
from slack_stack import SlackStack
from stacks import Stacks

from parley.client import Parley, ParleyAPIError
from workers.exceptions import SecretUnreadable
from workers.interaction import SECRET_MASK
from workers.store.sealed import SecretBox

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server for a Redis with an AOF"),
]

KEY = Fernet.generate_key().decode()
CHANNEL = "C0GENERAL"
TOKEN_LABEL = "Deploy token"


@pytest.fixture(scope="module")
def aof_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with scratch_dir(tmp_path_factory.mktemp("aof-logs")) as path:
        yield path


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def stack(
    aof_dir: Path, tmp_path_factory: pytest.TempPathFactory, hooks: Receiver, stacks: Stacks
) -> Iterator[SlackStack]:
    server = data_server("aof", aof_dir, "--appendonly", "yes", "--appendfsync", "always").start()
    env = {"PARLEY_SECRET_KEY": KEY, "PARLEY_WEBHOOK_ALLOW": "127.0.0.1:*", "PARLEY_API_RATE_LIMIT": "100000"}
    try:
        url = f"redis://127.0.0.1:{server.port}/1"
        yield stacks(redis_url=url, workers=1, extra_env=env)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tokens(stack: SlackStack) -> dict[str, Token]:
    return {
        "asker": create_token(stack, "deployer"),
        "other": create_token(stack, "other-bot"),
        "boss": create_token(stack, "auditor", "admin", "ask"),
    }


def secret_request(reason: str, label: str = TOKEN_LABEL) -> dict[str, Any]:
    items = [
        {"id": "token", "text": label, "type": "secret"},
        {"id": "env", "text": "Environment", "type": "free_text"},
    ]
    return {"reason": reason, "items": items}


def read(stack: SlackStack, token: Token, qid: str, **params: Any) -> httpx.Response:
    assert stack.http is not None
    return stack.http.get(f"/api/v1/questions/{qid}", params=params, headers=token.auth, timeout=40)


def answer_in_the_form(stack: SlackStack, created: dict[str, Any], user: str, fills: dict[str, str]) -> None:
    """`user` clicks "Answer in a form" on the question's message and submits the form, as Slack sends both."""
    message = stack.ws.message(created["channel"], created["message_ts"])
    assert message is not None
    block, button = find_element(message["blocks"], "parley_open_form")
    mark = stack.mark()
    click = block_actions_payload(
        user=user,
        message=message,
        channel=created["channel"],
        action=button_action(block, button),
        trigger=stack.ws.issue_trigger(user),
    )
    assert stack.interact(click).status_code == 200
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark)
    [view] = stack.ws.open_views(user)
    submitted = view_submission_payload(user=user, view=view, state_values=form_state(view["blocks"], fills))
    resp = stack.interact(submitted)
    assert resp.status_code == 200 and not resp.content, resp.text


def on_disk(directory: Path) -> bytes:
    """Everything Redis wrote to its directory: the AOF (its base and increments) and any RDB."""
    return b"".join(
        p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file() and p.suffix in {".aof", ".rdb"}
    )


def sealed_copies_of(stack: SlackStack, secret: str) -> list[bytes]:
    """The keys holding a Fernet token that opens to `secret`."""
    assert stack.redis is not None
    box = SecretBox(KEY)
    found = []
    for key, values in redis_values(stack.redis).items():
        for value in values:
            if value.startswith(b"gAAAAA"):
                try:
                    opened = box.open(value.decode())
                except (SecretUnreadable, UnicodeDecodeError):
                    continue
                if secret in opened.values():
                    found.append(key)
    return found


def test_a_secret_answer_is_shown_nowhere_and_read_once_by_the_token_that_asked(
    stack: SlackStack, tokens: dict[str, Token], hooks: Receiver, aof_dir: Path
) -> None:
    asker, other, boss = tokens["asker"], tokens["other"], tokens["boss"]
    assert stack.http is not None
    body = {"request": secret_request("Deploy api v2?"), "channel": CHANNEL, "callback_url": hooks.url("secret")}
    created = stack.http.post("/api/v1/questions", json=body, headers=asker.auth)
    assert created.status_code == 201, created.text
    question = created.json()
    qid = question["id"]
    home = stack.open_home(ADMIN)  # the admin's Home tab lists the paused question with its Inspect button

    secret = f"tok-{secrets.token_hex(12)}"
    answer_in_the_form(stack, question, "U0BOB", {TOKEN_LABEL: secret, "Environment": "prod"})
    got = read(stack, asker, qid, wait=20).json()
    assert got["status"] == "answered" and got["answers"] == {"token": SECRET_MASK, "env": "prod"}
    stack.wait_for("the run to end", lambda: stack.status(qid) == "succeeded")
    stack.wait_for("the webhook", lambda: hooks.deliveries("secret"))

    # Inspect, clicked on the Home tab the admin opened while the question waited.
    block = next(b for b in home["blocks"] if b.get("block_id") == f"hra|{qid}")
    _, inspect = find_element([block], "parley_inspect")
    mark = stack.mark()
    click = home_actions_payload(
        user=ADMIN, view=home, action=button_action(block, inspect), trigger=stack.ws.issue_trigger(ADMIN)
    )
    assert stack.interact(click).status_code == 200
    opened = stack.wait_call("views.open", since=mark)
    assert opened["status"] == 200, opened
    assert SECRET_MASK in json.dumps(opened["args"], ensure_ascii=False)

    shown = subprocess.run(
        [str(PARLEY), "runs", "show", qid], env=stack.env(), capture_output=True, text=True, timeout=30, check=True
    ).stdout
    assert SECRET_MASK in shown and "succeeded" in shown
    listings = [stack.http.get("/api/v1/questions", headers=t.auth).text for t in (asker, boss)]
    assert all(qid in page for page in listings)
    [delivery] = hooks.deliveries("secret")
    assert json.loads(delivery["body"])["data"]["answers"] == {"token": SECRET_MASK, "env": "prod"}

    assert stack.redis is not None and redis_values(stack.redis), "the search read no key"
    assert keys_holding(stack.redis, secret) == []
    aof = on_disk(aof_dir)
    assert qid.encode() in aof, "the search read no AOF"
    assert secret.encode() not in aof, "the secret was written to the AOF in the clear"
    assert bodies_holding(stack.ws.calls(), secret) == []
    assert secret not in shown and all(secret not in page for page in listings)
    assert secret not in delivery["body"]
    assert secret not in stack.logs(tail=10**7)
    assert sealed_copies_of(stack, secret) == [f"parley:api:question:{qid}:secrets".encode()]

    # Another token, an admin's too, is told there is no such question; they read the mask as before.
    for stranger in (other, boss):
        refused = read(stack, stranger, qid, reveal="secrets")
        assert refused.status_code == 404 and refused.headers["content-type"] == "application/problem+json"
    assert read(stack, boss, qid).json()["answers"]["token"] == SECRET_MASK
    assert read(stack, asker, qid, reveal="all").status_code == 422

    # The token that asked reads it once, with the Python client; then the sealed copy is gone: 410.
    with Parley(f"http://127.0.0.1:{stack.port}", asker.token) as client:
        revealed = client.get(qid, reveal_secrets=True)
        assert revealed["answers"] == {"token": secret, "env": "prod"} and revealed["status"] == "answered"
        with pytest.raises(ParleyAPIError) as gone:
            client.get(qid, reveal_secrets=True)
        assert gone.value.status == 410 and gone.value.problem["title"] == "Gone"
        assert client.get(qid)["answers"]["token"] == SECRET_MASK
    again = read(stack, asker, qid, reveal="secrets")
    assert again.status_code == 410 and again.headers["content-type"] == "application/problem+json"
    assert sealed_copies_of(stack, secret) == [] and keys_holding(stack.redis, secret) == []
    assert secret not in stack.logs(tail=10**7)


def test_the_client_waits_and_reveals_in_one_call(stack: SlackStack, tokens: dict[str, Token]) -> None:
    asker = tokens["asker"]
    with Parley(f"http://127.0.0.1:{stack.port}", asker.token) as client:
        qid = client.submit(secret_request("Rotate the signing key?"), channel=CHANNEL)
        secret = f"tok-{secrets.token_hex(12)}"
        created = read(stack, asker, qid).json()
        answer_in_the_form(stack, created, "U0CAROL", {TOKEN_LABEL: secret, "Environment": "staging"})
        assert client.wait(qid, timeout=30, reveal_secrets=True) == {"token": secret, "env": "staging"}
        with pytest.raises(ParleyAPIError) as gone:
            client.wait(qid, timeout=5, reveal_secrets=True)
        assert gone.value.status == 410


def test_secret_item_text_is_escaped_once(stack: SlackStack, tokens: dict[str, Token]) -> None:
    assert stack.http is not None
    body = {"request": secret_request("Which token?", label="Tom & Jerry <b>"), "channel": CHANNEL}
    created = stack.http.post("/api/v1/questions", json=body, headers=tokens["asker"].auth)
    assert created.status_code == 201, created.text
    message = stack.ws.message(CHANNEL, created.json()["message_ts"])
    assert message is not None
    listing = next(b for b in message["blocks"] if str(b.get("block_id", "")).startswith("qt|"))
    assert listing["text"]["text"].startswith("• Tom &amp; Jerry &lt;b&gt; :lock:"), listing["text"]["text"]
    assert "&amp;amp;" not in json.dumps(message) and "&amp;lt;" not in json.dumps(message)


def test_ask_human_over_mcp_refuses_a_secret_item_and_points_to_the_http_api(
    stack: SlackStack, tokens: dict[str, Token]
) -> None:
    mark = stack.mark()
    arguments = {
        "channel": CHANNEL,
        "wait_seconds": 0,
        "questions": [{"id": "otp", "header": "Code", "question": "The one-time code?", "type": "secret"}],
    }

    async def call() -> Any:
        http = httpx2.AsyncClient(headers=tokens["asker"].auth, timeout=httpx2.Timeout(30, read=60))
        async with Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp", http_client=http)) as client:
            return await client.call_tool("ask_human", arguments)

    result = anyio.run(call)
    assert result.is_error
    text = result.content[0].text
    assert "type 'secret' cannot be asked over MCP" in text and "?reveal=secrets" in text
    assert "POST /api/v1/questions" in text
    assert stack.calls("chat.postMessage", since=mark) == []
