"""Request bodies against a live `parley serve`: slow ones hold no ack thread, big ones are refused.

Clients that send a body a byte at a time must not stop Slack's acks (a signed Submit is
acked within Slack's 3 s while 100 of them drip), and are cut off with 408 at the deadline;
a body over its path's cap is refused with 413 problem+json, from its `Content-Length`
before anything is read, or as soon as a chunked body passes the cap.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpx
import pytest
from api_support import Token, approval, create_token
from slack_forms import button_action, find_element, form_state
from slack_payloads import EVENTS_PATH, FORM, block_actions_payload, interaction_body, signed_headers
from slack_stack import SlackStack

from bot.body_limits import API_BODY_MAX, BODY_DEADLINE, MCP_BODY_MAX, SLACK_BODY_MAX
from bot.http_heads import HEAD_DEADLINE, HEAD_MAX

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1, extra_env={"PARLEY_API_RATE_LIMIT": "100000"})]

CHANNEL = "C0GENERAL"
DRIPPERS = 100
SLACK_ACK_LIMIT = 3.0  # Slack shows the person an error past this


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "bodies")


# ---- raw HTTP ------------------------------------------------------------------------------
def head(stack: SlackStack, path: str, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{stack.port}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def exchange(stack: SlackStack, request: bytes, chunks: Iterable[bytes] = (), wait: float = 10) -> bytes:
    """Send `request`, then `chunks` while the server reads; everything it answers until it closes."""
    with socket.create_connection(("127.0.0.1", stack.port), timeout=wait) as sock:
        sock.sendall(request)
        for chunk in chunks:
            try:
                sock.sendall(chunk)
            except OSError:  # refused and closed part way: the answer is already there
                break
        got = b""
        try:
            while data := sock.recv(65536):
                got += data
        except ConnectionResetError:  # closed with bytes of ours unread: a reset after the answer
            pass
        return got


def status_and_body(raw: bytes) -> tuple[int, dict[str, str], Any]:
    head_part, _, body = raw.partition(b"\r\n\r\n")
    lines = head_part.decode("latin1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body) if body else None


def chunked(total: int, size: int = 65536) -> Iterator[bytes]:
    """A chunked body of `total` bytes, never terminated (the server must stop reading on its own).

    Just over a cap, so the server has read all of it when it refuses (with bytes of ours unread
    in its socket, its close would be a reset, which may discard the answer before it is read)."""
    sent = 0
    while sent < total:
        n = min(size, total - sent)
        yield f"{n:x}\r\n".encode() + b"a" * n + b"\r\n"
        sent += n


# ---- slow bodies (issue 36, item 1) --------------------------------------------------------
def ask(stack: SlackStack, token: Token, reason: str) -> dict[str, Any]:
    assert stack.http is not None
    body = {"request": approval(reason), "channel": CHANNEL}
    resp = stack.http.post("/api/v1/questions", json=body, headers=token.auth)
    assert resp.status_code == 201, resp.text
    return resp.json()


def submit_body(stack: SlackStack, created: dict[str, Any]) -> str:
    message = stack.ws.message(CHANNEL, created["message_ts"])
    assert message is not None
    block, button = find_element(message["blocks"], "parley_submit")
    payload = block_actions_payload(
        user="U0BOB",
        message=message,
        channel=CHANNEL,
        action=button_action(block, button),
        state_values=form_state(message["blocks"], {"Decision": "approve"}),
    )
    return interaction_body(payload)


async def drip(port: int, started: list[float], ended: list[tuple[float, bytes]]) -> None:
    """One attacker: a body of 1,000,000 bytes announced, then one byte a second until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST {EVENTS_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {FORM}\r\n"
        "Content-Length: 1000000\r\n\r\n".encode()
    )
    started.append(time.monotonic())
    answer = await dripped_until_closed(reader, writer, b"a", BODY_DEADLINE + 20)
    ended.append((time.monotonic(), answer))  # when it closed


async def dripped_until_closed(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, drop: bytes, limit: float
) -> bytes:
    """Send `drop` each second (nothing if empty) and return what the server answers until it closes.

    After `limit` seconds the answer is `b"still open"`.
    """

    async def dripping() -> None:
        while drop:
            writer.write(drop)
            await writer.drain()
            await asyncio.sleep(1)

    async def answer() -> bytes:
        got = b""
        try:
            while data := await reader.read(65536):
                got += data
        except ConnectionError:  # closed with our unread bytes in its buffer: a reset after the answer
            pass
        return got

    sender = asyncio.create_task(dripping())
    try:
        return await asyncio.wait_for(answer(), timeout=limit)
    except TimeoutError:
        return b"still open"
    finally:
        sender.cancel()
        writer.close()


def test_a_submit_is_acked_while_a_hundred_clients_drip_their_bodies(stack: SlackStack, token: Token) -> None:
    created = ask(stack, token, "Ship while under attack?")
    body = submit_body(stack, created)

    async def scenario() -> tuple[httpx.Response | Exception, list[float], list[tuple[float, bytes]]]:
        started: list[float] = []
        ended: list[tuple[float, bytes]] = []
        attackers = [asyncio.create_task(drip(stack.port, started, ended)) for _ in range(DRIPPERS)]
        await asyncio.sleep(1.5)  # every attacker has sent its headers and a byte or two
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{stack.port}") as client:
                headers = signed_headers(body, FORM)  # signed now, as Slack signs it when it sends
                ack: httpx.Response | Exception = await client.post(
                    EVENTS_PATH, content=body.encode(), headers=headers, timeout=SLACK_ACK_LIMIT
                )
        except httpx.TimeoutException as exc:
            ack = exc
        await asyncio.gather(*attackers)
        return ack, started, ended

    ack, started, ended = asyncio.run(scenario())
    assert isinstance(ack, httpx.Response), f"no ack within {SLACK_ACK_LIMIT} s: {ack!r}"
    assert ack.status_code == 200, ack.text
    assert len(ended) == DRIPPERS
    for at, answer in ended:
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert at - min(started) < BODY_DEADLINE + 10  # cut off at the deadline, not when the attacker tires
    assert stack.http is not None
    answered = stack.http.get(f"/api/v1/questions/{created['id']}?wait=20", headers=token.auth, timeout=30).json()
    assert answered["status"] == "answered" and answered["answered_by"] == "U0BOB", answered


# ---- big bodies (issue 36, item 3) ---------------------------------------------------------
@pytest.mark.parametrize(("path", "cap"), [(EVENTS_PATH, SLACK_BODY_MAX), ("/api/v1/questions", API_BODY_MAX)])
def test_a_declared_body_over_the_cap_is_refused_before_it_is_read(
    stack: SlackStack, token: Token, path: str, cap: int
) -> None:
    declared = 100_000_000
    auth = [f"{k}: {v}" for k, v in token.auth.items()]
    raw = exchange(stack, head(stack, path, f"Content-Length: {declared}", "Content-Type: application/json", *auth))
    status, headers, problem = status_and_body(raw)  # answered with none of the body sent, and closed
    assert status == 413 and headers["content-type"] == "application/problem+json" and headers["connection"] == "close"
    assert problem["status"] == 413 and str(declared) in problem["detail"] and str(cap) in problem["detail"]


@pytest.mark.parametrize(("path", "cap"), [(EVENTS_PATH, SLACK_BODY_MAX), ("/api/v1/questions", API_BODY_MAX)])
def test_a_chunked_body_is_stopped_at_the_cap(stack: SlackStack, token: Token, path: str, cap: int) -> None:
    auth = [f"{k}: {v}" for k, v in token.auth.items()]
    request = head(stack, path, "Transfer-Encoding: chunked", "Content-Type: application/json", *auth)
    status, headers, problem = status_and_body(exchange(stack, request, chunked(cap + 1)))
    assert status == 413 and headers["content-type"] == "application/problem+json"
    assert str(cap) in problem["detail"]


def test_mcp_has_its_cap_too(stack: SlackStack, token: Token) -> None:
    auth = [f"{k}: {v}" for k, v in token.auth.items()]
    declared = head(stack, "/mcp", f"Content-Length: {MCP_BODY_MAX + 1}", "Content-Type: application/json", *auth)
    assert status_and_body(exchange(stack, declared))[0] == 413
    request = head(stack, "/mcp", "Transfer-Encoding: chunked", "Content-Type: application/json", *auth)
    assert status_and_body(exchange(stack, request, chunked(MCP_BODY_MAX + 1)))[0] == 413


# ---- request heads -------------------------------------------------------------------------
def test_a_head_over_its_cap_is_refused_with_431_before_the_app_sees_it(stack: SlackStack) -> None:
    quiet = create_token(stack, "heads")
    auth = [f"{k}: {v}" for k, v in quiet.auth.items()]
    body = json.dumps({"request": approval("Asked with a head too big?"), "channel": CHANNEL}).encode()
    request = head(stack, "/api/v1/questions", "Content-Type: application/json", f"Content-Length: {len(body)}", *auth)
    padding = (f"X-Pad-{n}: {'a' * 1000}\r\n".encode() for n in range(1000))  # past the cap and a read
    raw = exchange(stack, request[:-2], [*padding, b"\r\n" + body])
    assert raw.startswith(b"HTTP/1.1 431 ") and b"connection: close" in raw, raw[:300]
    assert f"headers over {HEAD_MAX} bytes".encode() in raw
    assert stack.http is not None
    listed = stack.http.get("/api/v1/questions", headers=quiet.auth).json()
    assert listed["questions"] == []  # the app never saw it: nothing asked
    assert stack.http.get("/healthz").status_code == 200


async def slow_head(port: int, kind: str) -> tuple[float, bytes]:
    """One client whose request head never ends: silent, dripping, or dripping on a kept connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    if kind == "kept":  # a first request answered, then the next head drips
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        first = await reader.readuntil(b"\r\n0\r\n\r\n")  # /healthz answers "ok", chunked
        assert first.startswith(b"HTTP/1.1 200 "), first
        started = time.monotonic()

    if kind != "silent":
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
    got = await dripped_until_closed(reader, writer, b"" if kind == "silent" else b"X-Drip: 1\r\n", HEAD_DEADLINE + 20)
    return time.monotonic() - started, got


def test_heads_not_complete_in_time_are_refused_with_408_and_closed(stack: SlackStack) -> None:
    async def scenario() -> list[tuple[str, float, bytes]]:
        kinds = ["silent", "dripping", "kept"] * 10
        ended = await asyncio.gather(*(slow_head(stack.port, kind) for kind in kinds))
        return [(kind, took, got) for kind, (took, got) in zip(kinds, ended, strict=True)]

    for kind, took, got in asyncio.run(scenario()):
        assert got.startswith(b"HTTP/1.1 408 "), (kind, got[:200])
        assert took < HEAD_DEADLINE + 10, (kind, took)  # cut off at the deadline, not when the client tires
    assert stack.http is not None and stack.http.get("/healthz").status_code == 200


def test_a_head_too_big_behind_a_pending_answer_closes_without_answering_in_its_place(
    stack: SlackStack, token: Token
) -> None:
    """HTTP/1.1 answers in order: a 431 written while a long-poll waits would read as the poll's answer."""
    created = ask(stack, token, "Pipelined behind a long-poll?")
    auth = "".join(f"{k}: {v}\r\n" for k, v in token.auth.items())
    poll = f"GET /api/v1/questions/{created['id']}?wait=3 HTTP/1.1\r\nHost: 127.0.0.1:{stack.port}\r\n{auth}\r\n"
    padding = (f"X-Pad-{n}: {'a' * 1000}\r\n".encode() for n in range(1000))
    raw = exchange(stack, poll.encode() + b"GET /healthz HTTP/1.1\r\n", padding)
    assert b" 431 " not in raw, raw[:300]  # closed, the poll unanswered: a client retries it


def test_a_body_longer_than_a_head_may_be_is_read_as_a_body(stack: SlackStack, token: Token) -> None:
    """Only a head counts toward the head's cap, even when its body ends in a long read."""
    assert stack.http is not None
    body = b"[" * 300_000 + b"]" * 300_000  # too deep to ask: refused by the app, not the protocol
    resp = stack.http.post(
        "/api/v1/questions", content=body, headers={**token.auth, "Content-Type": "application/json"}
    )
    assert resp.status_code == 400 and resp.headers["content-type"] == "application/problem+json", resp.text
