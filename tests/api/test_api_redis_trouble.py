"""The HTTP API while its Redis is full, refusing or down: a live `parley serve` on a Redis server of its own.

The server is Debian's `redis-server`, started by this module (tests/redis_servers.py), so the
tests may fill it (`maxmemory` with `noeviction`), take commands from Parley's user with an ACL,
or stop it. Parley connects as an ACL user of its own; the test's admin connection is the
default user. No worker runs but where a test starts one: `parley serve` posts each question
itself, so what the stand-in shows was posted by the request under test.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from api_support import Token, approval, create_token
from redis_servers import Server, data_server, have_redis_server
from slack_stack import SlackStack, stop_process_group
from stacks import Stacks

from workers.store import keys
from workers.store.idempotency import Binding
from workers.store.records import TOKEN_OWNER

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not have_redis_server(), reason="needs Debian's redis-server"),
]

CHANNEL = "C0GENERAL"
USER, PASSWORD = "parley-api", "parley-api-password"
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = add_user(data_server("api-trouble", tmp_path_factory.mktemp("api-trouble-redis")).start())
    yield srv
    srv.stop()


def add_user(server: Server) -> Server:
    """Parley's own ACL user on `server`, allowed everything until a test takes something away."""
    admin = server.client()
    admin.acl_setuser(USER, enabled=True, passwords=[f"+{PASSWORD}"], keys=["*"], channels=["*"], commands=["+@all"])
    admin.close()
    return server


@pytest.fixture(scope="module")
def stack(server: Server, tmp_path_factory: pytest.TempPathFactory, stacks: Stacks) -> Iterator[SlackStack]:
    url = f"redis://{USER}:{PASSWORD}@127.0.0.1:{server.port}/0"
    env = {"PARLEY_API_RATE_LIMIT": "100000", "PARLEY_REQUEUE_GRACE": "1"}
    yield stacks(redis_url=url, workers=0, extra_env=env)


@pytest.fixture(scope="module")
def ci(stack: SlackStack) -> Token:
    return create_token(stack, "ci-bot")


@pytest.fixture
def admin(server: Server) -> Iterator[redis.Redis]:
    """The test's own connection (the default user), which puts the server back as it was after each test."""
    client = server.client()
    yield client
    client.config_set("maxmemory", 0)
    rules(client, ["+@all"])
    client.close()


def rules(admin: redis.Redis, commands: list[str]) -> None:
    """Change what Parley's user may run; it stays enabled (redis-py's `acl_setuser` disables by default)."""
    admin.acl_setuser(USER, enabled=True, commands=commands)


def post(http: httpx.Client, token: Token, reason: str, **headers: str) -> httpx.Response:
    body = {"request": approval(reason), "channel": CHANNEL}
    return http.post("/api/v1/questions", json=body, headers={**token.auth, **headers})


def posted(stack: SlackStack, reason: str) -> list[dict[str, Any]]:
    return [m for m in stack.ws.messages(CHANNEL) if reason in json.dumps(m)]


def idempotency_key(token: Token, key: str) -> str:
    """The Redis key that binds `key` of `token`'s owner (`workers.store.idempotency`)."""
    owner = f"{TOKEN_OWNER}{hashlib.sha256(token.token.encode()).hexdigest()[:24]}"
    return Binding(owner, hashlib.sha256(key.encode()).hexdigest(), "").name


def local_port(resp: httpx.Response) -> int:
    """The client's end of the connection `resp` came over: one port for all means one connection."""
    return int(resp.extensions["network_stream"].get_extra_info("socket").getsockname()[1])


def test_a_create_failing_after_its_key_is_bound_leaves_the_key_free(
    stack: SlackStack, ci: Token, admin: redis.Redis
) -> None:
    """Redis refuses the question's writes (ZADD) after the Idempotency-Key could be bound: a retry asks anew."""
    assert stack.http is not None
    rules(admin, ["-zadd"])
    failed = post(stack.http, ci, "Rotate the keys?", **{"Idempotency-Key": "rotate-1"})
    assert failed.status_code >= 500, failed.text
    assert not admin.exists(idempotency_key(ci, "rotate-1"))  # the key is bound to nothing
    rules(admin, ["+@all"])
    again = post(stack.http, ci, "Rotate the keys?", **{"Idempotency-Key": "rotate-1"})
    assert again.status_code == 201, again.text
    assert admin.exists(idempotency_key(ci, "rotate-1"))  # bound now, under the name checked above
    assert again.json()["status"] == "waiting" and len(posted(stack, "Rotate the keys?")) == 1
    assert failed.headers["content-type"] == PROBLEM, failed.text


def test_a_post_that_failed_after_its_question_was_created_posts_nothing_later(
    stack: SlackStack, ci: Token, admin: redis.Redis
) -> None:
    """Created, then Redis refuses the run's claim (a script): the question is withdrawn, so no worker finds
    it to post later, and a retry with the same key asks it once."""
    assert stack.http is not None
    rules(admin, ["-@scripting"])
    failed = post(stack.http, ci, "Drain the queue?", **{"Idempotency-Key": "drain-1"})
    assert failed.status_code >= 500, failed.text
    assert admin.zcard(keys.status_index("queued")) == 0  # no queued run a worker's sweep would enqueue and post
    assert not admin.exists(idempotency_key(ci, "drain-1"))
    rules(admin, ["+@all"])
    again = post(stack.http, ci, "Drain the queue?", **{"Idempotency-Key": "drain-1"})
    assert again.status_code == 201, again.text
    assert len(posted(stack, "Drain the queue?")) == 1
    assert failed.headers["content-type"] == PROBLEM, failed.text


def test_a_question_that_cannot_be_withdrawn_is_named_and_a_retry_with_its_key_returns_it(
    stack: SlackStack, ci: Token, admin: redis.Redis
) -> None:
    """Redis refuses the claim and the withdrawal's deletions too: the 503 names the question, which a worker
    posts once Redis is back, and the same Idempotency-Key returns it instead of asking again."""
    assert stack.http is not None
    rules(admin, ["-@scripting", "-del"])
    failed = post(stack.http, ci, "Flush the DNS?", **{"Idempotency-Key": "flush-1"})
    assert failed.status_code == 503 and failed.headers["content-type"] == PROBLEM, failed.text
    assert int(failed.headers["retry-after"]) >= 1
    kept = failed.json()["question_id"]
    rules(admin, ["+@all"])
    again = post(stack.http, ci, "Flush the DNS?", **{"Idempotency-Key": "flush-1"})
    assert again.status_code == 200 and again.json()["id"] == kept, again.text
    assert posted(stack, "Flush the DNS?") == []
    worker = stack.spawn_worker("late-worker")  # its sweep finds the queued question and posts it, once
    try:
        stack.wait_for("the question to be posted", lambda: posted(stack, "Flush the DNS?"))

        def shown() -> dict[str, Any] | None:  # the post is recorded just after Slack took it
            view = stack.http.get(f"/api/v1/questions/{kept}", params={"wait": 0}, headers=ci.auth).json()
            return view if view["message_ts"] else None

        view = stack.wait_for("the post to be recorded", shown)
        assert view["status"] == "waiting", view
        assert len(posted(stack, "Flush the DNS?")) == 1
    finally:
        stop_process_group(worker)
        stack.procs.remove(worker)


def test_while_redis_is_full_reads_go_on_and_a_post_is_503_with_retry_after(
    stack: SlackStack, ci: Token, admin: redis.Redis
) -> None:
    assert stack.http is not None
    asked = post(stack.http, ci, "Warm the cache?")
    assert asked.status_code == 201, asked.text
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", 1)  # every write that needs memory is refused with OOM

    with httpx.Client(base_url=str(stack.http.base_url), timeout=15) as http:
        listed = http.get("/api/v1/questions", headers=ci.auth)  # the rate limit's INCR is refused: let through
        one = http.get(f"/api/v1/questions/{asked.json()['id']}", headers=ci.auth)
        full = post(http, ci, "Purge the CDN?", **{"Idempotency-Key": "purge-1"})
        after = http.get("/api/v1/questions", headers=ci.auth)
        assert (listed.status_code, one.status_code, after.status_code) == (200, 200, 200), listed.text
        assert asked.json()["id"] in [q["id"] for q in listed.json()["questions"]]
        assert full.status_code == 503 and full.headers["content-type"] == PROBLEM, full.text
        assert int(full.headers["retry-after"]) >= 1
        assert len({local_port(r) for r in (listed, one, full, after)}) == 1  # one connection, kept

    admin.config_set("maxmemory", 0)
    again = post(stack.http, ci, "Purge the CDN?", **{"Idempotency-Key": "purge-1"})
    assert again.status_code == 201, again.text
    assert len(posted(stack, "Purge the CDN?")) == 1


def test_while_redis_is_down_the_api_answers_503_problems(stack: SlackStack, ci: Token, server: Server) -> None:
    assert stack.http is not None
    server.stop()
    try:
        with httpx.Client(base_url=str(stack.http.base_url), timeout=30) as http:
            read = http.get("/api/v1/questions", headers=ci.auth)
            write = post(http, ci, "Anyone there?")
            for resp in (read, write):
                assert resp.status_code == 503 and resp.headers["content-type"] == PROBLEM, resp.text
                assert int(resp.headers["retry-after"]) >= 1
            assert local_port(read) == local_port(write)
    finally:
        add_user(server.start())  # back, empty, on the same port: the stack's teardown flushes it
