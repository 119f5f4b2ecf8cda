"""MCP end to end, with the `mcp` package's own client: over stdio (`parley mcp` spawned by the
SDK's stdio client) and over streamable HTTP (`/mcp` of a live `parley serve`), with real
`parley worker`s and the Web API stand-in. Questions are answered with Slack's signed
`block_actions` payloads, as a person clicking Submit sends them.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
from api_support import Token, create_token, from_address
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from slack_forms import button_action, find_element, form_state
from slack_payloads import block_actions_payload, view_submission_payload
from slack_stack import PARLEY, SlackStack

from parley.client import Parley, ParleyAPIError

pytestmark = [pytest.mark.system, pytest.mark.stack()]

CHANNEL = "C0GENERAL"
ORIGIN = "desk-assistant"
AUTH_FAILURES = 20  # PARLEY_API_AUTH_FAILURES's default
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}  # fmt: skip


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, "mcp-agent")


# ---- connecting ----------------------------------------------------------------------------
def stdio(stack: SlackStack) -> Client:
    env = {**stack.env(), "PARLEY_MCP_ORIGIN": ORIGIN}
    return Client(StdioServerParameters(command=str(PARLEY), args=["mcp"], env=env), read_timeout_seconds=90)


def over_http(stack: SlackStack, token: Token) -> Client:
    http = httpx2.AsyncClient(headers=token.auth, timeout=httpx2.Timeout(30, read=90))
    return Client(streamable_http_client(f"http://127.0.0.1:{stack.port}/mcp", http_client=http))


Connect = Callable[[SlackStack, Token], Client]
TRANSPORTS: dict[str, Connect] = {"stdio": lambda stack, token: stdio(stack), "http": over_http}


@pytest.fixture(params=list(TRANSPORTS))
def connect(request: pytest.FixtureRequest, stack: SlackStack, token: Token) -> Callable[[], Client]:
    return lambda: TRANSPORTS[request.param](stack, token)


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(fn)


# ---- asking and answering ------------------------------------------------------------------
def questions(topic: str) -> dict[str, Any]:
    """`ask_user` arguments: one single-choice question (a form with Submit: the choice, and "Other")."""
    return {
        "questions": [
            {
                "id": "plan",
                "header": "Plan",
                "question": f"Which plan for {topic}?",
                "type": "single",
                "options": [{"label": "Canary"}, {"label": "Full rollout"}],
            }
        ],
        "context": {"topic": topic},
    }


def posted(stack: SlackStack, topic: str, channel: str = CHANNEL) -> dict[str, Any]:
    """The question message that asks about `topic`, once it is in `channel`."""
    return stack.wait_for(
        f"the question about {topic} to be posted",
        lambda: next((m for m in stack.ws.messages(channel) if f"Which plan for {topic}?" in json.dumps(m)), None),
    )


def click_submit(stack: SlackStack, topic: str, choice: str, user: str, channel: str = CHANNEL) -> None:
    """`user` picks `choice` in the question's form and clicks Submit, as Slack sends it."""
    message = posted(stack, topic, channel)
    block, button = find_element(message["blocks"], "parley_submit")
    label = next(b["label"]["text"] for b in message["blocks"] if b.get("type") == "input" and "Plan" in json.dumps(b))
    payload = block_actions_payload(
        user=user,
        message=message,
        channel=channel,
        action=button_action(block, button),
        state_values=form_state(message["blocks"], {label: choice}),
    )
    resp = stack.interact(payload)
    assert resp.status_code == 200, resp.text


def result_of(called: CallToolResult) -> dict[str, Any]:
    assert not called.is_error, called.content
    text = json.loads(called.content[0].text)  # type: ignore[union-attr]
    assert text == called.structured_content
    return dict(called.structured_content)


def topic() -> str:
    return f"release-{uuid.uuid4().hex[:8]}"


def test_ask_human_is_answered_in_slack_within_the_call(
    stack: SlackStack, connect: Callable[[], Client], token: Token, request: pytest.FixtureRequest
) -> None:
    about = topic()

    async def scenario() -> dict[str, Any]:
        async with connect() as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"ask_human", "get_answer", "request_approval", "approve_tool_use"}
            got: dict[str, Any] = {}

            async def ask() -> None:
                args = {**questions(about), "channel": CHANNEL, "wait_seconds": 40}
                got["result"] = await client.call_tool("ask_human", args)

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                await anyio.to_thread.run_sync(lambda: click_submit(stack, about, "Full rollout", "U0CAROL"))
            return result_of(got["result"])

    result = run(scenario)
    assert result["status"] == "answered", result
    assert result["answers"] == {"plan": "Full rollout", "plan__other": None}
    assert result["answered_by"] == "U0CAROL" and result["question_id"]
    # The message opens with who asked, through MCP, above the agent's text.
    origin = ORIGIN if request.node.callspec.params["connect"] == "stdio" else token.name
    first = posted(stack, about)["blocks"][0]
    assert (first["type"], first["elements"][0]["text"]) == ("context", f"Asked by *{origin}* through MCP")


def test_wait_runs_out_then_get_answer_returns_the_answers(stack: SlackStack, connect: Callable[[], Client]) -> None:
    about = topic()

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with connect() as client:
            args = {**questions(about), "channel": CHANNEL, "assignees": ["U0BOB"], "wait_seconds": 1}
            first = result_of(await client.call_tool("ask_human", args))
            assert first["status"] == "waiting", first
            still = result_of(
                await client.call_tool("get_answer", {"question_id": first["question_id"], "wait_seconds": 0})
            )
            await anyio.to_thread.run_sync(lambda: click_submit(stack, about, "Canary", "U0BOB"))
            later = result_of(
                await client.call_tool("get_answer", {"question_id": first["question_id"], "wait_seconds": 30})
            )
            return first, still, later

    first, still, later = run(scenario)
    assert set(first) == {"status", "question_id"}
    assert still == first
    assert later["status"] == "answered" and later["question_id"] == first["question_id"]
    assert later["answers"] == {"plan": "Canary", "plan__other": None} and later["answered_by"] == "U0BOB"


def test_ask_human_takes_a_number_and_a_yes_no_and_returns_them_typed(
    stack: SlackStack, connect: Callable[[], Client]
) -> None:
    about = topic()
    typed = {
        "questions": [
            {
                "id": "replicas",
                "header": "Replicas",
                "question": f"How many replicas for {about}?",
                "type": "number",
                "min": 1,
                "max": 10,
                "integer": True,
            },
            {"id": "go", "header": "Go", "question": "Deploy now?", "type": "boolean"},
        ]
    }

    def submit() -> None:
        message = stack.wait_for(
            "the typed question", lambda: next((m for m in stack.ws.messages(CHANNEL) if about in json.dumps(m)), None)
        )
        labels = {b["block_id"].split("|")[-1]: b["label"]["text"] for b in message["blocks"] if b["type"] == "input"}
        block, button = find_element(message["blocks"], "parley_submit")
        state = form_state(message["blocks"], {labels["replicas"]: "3", labels["go"]: "Yes"})
        payload = block_actions_payload(
            user="U0CAROL", message=message, channel=CHANNEL, action=button_action(block, button), state_values=state
        )
        assert stack.interact(payload).status_code == 200

    async def scenario() -> dict[str, Any]:
        async with connect() as client:
            got: dict[str, Any] = {}

            async def ask() -> None:
                got["result"] = await client.call_tool("ask_human", {**typed, "channel": CHANNEL, "wait_seconds": 40})

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                await anyio.to_thread.run_sync(submit)
            return result_of(got["result"])

    result = run(scenario)
    assert result["status"] == "answered", result
    assert result["answers"] == {"replicas": 3, "go": True}
    assert isinstance(result["answers"]["replicas"], int) and result["answers"]["go"] is True


def test_bad_input_is_a_tool_error_and_nothing_is_asked(stack: SlackStack, connect: Callable[[], Client]) -> None:
    mark = stack.mark()

    async def scenario() -> list[CallToolResult]:
        async with connect() as client:
            return [
                await client.call_tool("ask_human", {**questions("x"), "wait_seconds": 5}),  # no channel or user
                await client.call_tool("ask_human", {**questions("x"), "channel": CHANNEL, "wait_seconds": 51}),
                await client.call_tool("ask_human", {"questions": [{"id": "a", "type": "single"}], "user": "U0BOB"}),
                await client.call_tool("get_answer", {"question_id": "r-no-such-question", "wait_seconds": 1}),
            ]

    place, wait, question, unknown = run(scenario)
    assert all(r.is_error for r in (place, wait, question, unknown))
    assert '"channel"' in place.content[0].text and '"user"' in place.content[0].text  # type: ignore[union-attr]
    assert "wait_seconds must be a number of seconds from 0 to 50" in wait.content[0].text  # type: ignore[union-attr]
    assert "header must be non-empty text" in question.content[0].text  # type: ignore[union-attr]
    assert "no question 'r-no-such-question'" in unknown.content[0].text  # type: ignore[union-attr]
    assert stack.calls("chat.postMessage", since=mark) == []


def test_stdio_questions_carry_the_origin_and_outlive_the_process(stack: SlackStack) -> None:
    about = topic()

    async def ask() -> dict[str, Any]:
        async with stdio(stack) as client:
            return result_of(
                await client.call_tool("ask_human", {**questions(about), "user": "U0BOB", "wait_seconds": 0})
            )

    asked = run(ask)
    assert asked == {"status": "waiting", "question_id": asked["question_id"]}
    listed = subprocess.run([str(PARLEY), "runs", "list"], env=stack.env(), capture_output=True, text=True, check=True)
    row = next(line for line in listed.stdout.splitlines() if line.startswith(asked["question_id"]))
    assert ORIGIN in row  # PARLEY_MCP_ORIGIN, as who started it
    dm = stack.ws.resolve_channel("U0BOB")  # the DM the question went to, as Slack names it
    assert dm is not None
    click_submit(stack, about, "Canary", "U0BOB", channel=dm)

    async def later(origin: str) -> CallToolResult:
        env = {**stack.env(), "PARLEY_MCP_ORIGIN": origin}
        params = StdioServerParameters(command=str(PARLEY), args=["mcp"], env=env)
        async with Client(params, read_timeout_seconds=90) as client:  # a new process: the host restarted
            return await client.call_tool("get_answer", {"question_id": asked["question_id"], "wait_seconds": 20})

    answered = result_of(run(lambda: later(ORIGIN)))
    assert answered["status"] == "answered" and answered["answers"] == {"plan": "Canary", "plan__other": None}
    elsewhere = run(lambda: later("another-host"))  # another origin's questions are not this one's
    assert elsewhere.is_error and "no question" in elsewhere.content[0].text  # type: ignore[union-attr]


def open_form(stack: SlackStack, topic: str, user: str) -> Callable[[dict[str, str]], dict[str, Any]]:
    """`user` opens the question's form; returns how to submit it with fills, as Slack sends it, to bolt's reply."""
    message = posted(stack, topic)
    block, button = find_element(message["blocks"], "parley_open_form")
    mark = stack.mark()
    click = block_actions_payload(
        user=user,
        message=message,
        channel=CHANNEL,
        action=button_action(block, button),
        trigger=stack.ws.issue_trigger(user),
    )
    assert stack.interact(click).status_code == 200
    stack.wait_call("views.open", lambda c: c["status"] == 200, since=mark)
    [view] = stack.ws.open_views(user)

    def submit(fills: dict[str, str]) -> dict[str, Any]:
        resp = stack.interact(
            view_submission_payload(user=user, view=view, state_values=form_state(view["blocks"], fills))
        )
        assert resp.status_code == 200, resp.text
        return resp.json() if resp.content else {}

    return submit


def test_a_required_single_is_not_answered_by_an_empty_submit(stack: SlackStack, token: Token) -> None:
    """A required choice with its "Other" field needs one of the two, on Submit and in the form."""
    about = topic()
    need = "an answer is required: choose one, or fill in “Other (type your own answer)”"

    async def ask() -> dict[str, Any]:
        async with over_http(stack, token) as client:
            return result_of(await client.call_tool("ask_human", {**questions(about), "channel": CHANNEL}))

    asked = {**run(ask)}
    assert asked["status"] == "waiting", asked
    message = posted(stack, about)
    choice = next(b for b in message["blocks"] if b.get("type") == "input" and "Plan" in b["label"]["text"])
    assert choice["hint"]["text"] == "Required: choose one, or fill in “Other (type your own answer)” below."

    mark = stack.mark()
    block, button = find_element(message["blocks"], "parley_submit")
    empty = block_actions_payload(
        user="U0BOB",
        message=message,
        channel=CHANNEL,
        action=button_action(block, button),
        state_values=form_state(message["blocks"], {}),
    )
    assert stack.interact(empty).status_code == 200
    told = stack.wait_call("chat.postEphemeral", lambda c: c["args"].get("user") == "U0BOB", since=mark)
    assert need in told["args"]["text"]
    assert stack.calls("chat.update", since=mark) == []  # the message is not locked

    submit = open_form(stack, about, "U0BOB")
    form = submit({})
    assert form["response_action"] == "errors"
    [(block_id, error)] = form["errors"].items()
    assert block_id.endswith("|plan") and need in error

    async def still() -> dict[str, Any]:
        async with over_http(stack, token) as client:
            called = await client.call_tool("get_answer", {"question_id": asked["question_id"], "wait_seconds": 0})
            return result_of(called)

    assert run(still)["status"] == "waiting"
    assert submit({"Other (type your own answer)": "Blue-green"}) == {}

    async def answered() -> dict[str, Any]:
        async with over_http(stack, token) as client:
            called = await client.call_tool("get_answer", {"question_id": asked["question_id"], "wait_seconds": 20})
            return result_of(called)

    result = run(answered)
    assert result["status"] == "answered" and result["answers"] == {"plan": None, "plan__other": "Blue-green"}


def test_http_without_a_valid_bearer_token_is_refused(stack: SlackStack, token: Token) -> None:
    assert stack.http is not None
    headers = {"Accept": "application/json, text/event-stream"}
    none = stack.http.post("/mcp", json=INIT, headers=headers)
    wrong = stack.http.post("/mcp", json=INIT, headers={**headers, "Authorization": "Bearer pk_not-a-token"})
    assert none.status_code == 401 and wrong.status_code == 401
    auditor = create_token(stack, "mcp-auditor", "admin")  # may read, may not ask
    assert stack.http.post("/mcp", json=INIT, headers={**headers, **auditor.auth}).status_code == 403
    assert stack.http.post("/mcp", json=INIT, headers={**headers, **token.auth}).status_code == 200


def test_http_over_the_tokens_rate_limit_is_429(stack: SlackStack) -> None:
    assert stack.http is not None
    busy = create_token(stack, "mcp-busy", rate_limit=3)
    headers = {"Accept": "application/json, text/event-stream", **busy.auth}
    statuses = [stack.http.post("/mcp", json=INIT, headers=headers) for _ in range(4)]
    assert [r.status_code for r in statuses] == [200, 200, 200, 429]
    assert int(statuses[-1].headers["retry-after"]) >= 1


def test_a_token_past_its_open_questions_is_told_so_by_a_tool_error(stack: SlackStack) -> None:
    capped = create_token(stack, "mcp-capped", open_questions=1)
    first, second = topic(), topic()

    async def scenario() -> CallToolResult:
        async with over_http(stack, capped) as client:
            result_of(await client.call_tool("ask_human", {**questions(first), "channel": CHANNEL, "wait_seconds": 0}))
            return await client.call_tool("ask_human", {**questions(second), "channel": CHANNEL, "wait_seconds": 0})

    refused = run(scenario)
    assert refused.is_error and "mcp-capped has 1 question open" in refused.content[0].text  # type: ignore[union-attr]
    posted(stack, first)
    assert not any(f"Which plan for {second}?" in json.dumps(m) for m in stack.ws.messages(CHANNEL))


def test_a_token_cannot_read_another_tokens_question(stack: SlackStack, token: Token) -> None:
    other = create_token(stack, "mcp-other")
    about = topic()

    async def scenario() -> CallToolResult:
        async with over_http(stack, token) as mine:
            asked = result_of(
                await mine.call_tool("ask_human", {**questions(about), "channel": CHANNEL, "wait_seconds": 0})
            )
        async with over_http(stack, other) as theirs:
            return await theirs.call_tool("get_answer", {"question_id": asked["question_id"], "wait_seconds": 0})

    called = run(scenario)
    assert called.is_error and "no question" in called.content[0].text  # type: ignore[union-attr]


def test_a_workspace_bound_token_asks_and_reads_in_its_workspace_only(stack: SlackStack) -> None:
    alpha = create_token(stack, "mcp-alpha-admin", "admin", "ask", team="T0ALPHA")
    beta = create_token(stack, "mcp-beta", team="T0BETA")
    theirs_about, mine_about = topic(), topic()

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], CallToolResult]:
        async with over_http(stack, beta) as client:
            theirs = await client.call_tool(
                "ask_human", {**questions(theirs_about), "channel": CHANNEL, "wait_seconds": 0}
            )
        async with over_http(stack, alpha) as client:
            mine = await client.call_tool("ask_human", {**questions(mine_about), "channel": CHANNEL, "wait_seconds": 0})
            read = await client.call_tool(
                "get_answer", {"question_id": result_of(theirs)["question_id"], "wait_seconds": 0}
            )
        return result_of(theirs), result_of(mine), read

    theirs, mine, read = run(scenario)
    assert read.is_error and "no question" in read.content[0].text  # type: ignore[union-attr]
    assert stack.http is not None
    assert stack.http.get(f"/api/v1/questions/{theirs['question_id']}", headers=alpha.auth).status_code == 404
    with Parley(f"http://127.0.0.1:{stack.port}", alpha.token) as client, pytest.raises(ParleyAPIError) as caught:
        client.get(theirs["question_id"])  # the Python client, the same
    assert caught.value.status == 404
    assert stack.redis is not None
    redis = stack.redis

    def team_of(asked: dict[str, Any]) -> bytes | None:
        return redis.hget(f"parley:api:question:{asked['question_id']}", "team")

    assert (team_of(theirs), team_of(mine)) == (b"T0BETA", b"T0ALPHA")  # each asked in its token's workspace
    listed = stack.http.get("/api/v1/questions", headers=alpha.auth).json()["questions"]
    assert mine["question_id"] in {q["id"] for q in listed} and theirs["question_id"] not in {q["id"] for q in listed}


def test_an_http_token_named_like_a_local_origin_neither_reads_nor_cancels_its_questions(stack: SlackStack) -> None:
    about = topic()

    async def ask() -> dict[str, Any]:
        async with stdio(stack) as client:
            return result_of(
                await client.call_tool("ask_human", {**questions(about), "channel": CHANNEL, "wait_seconds": 0})
            )

    asked = run(ask)
    namesake = create_token(stack, ORIGIN, "ask")  # an HTTP token named as `parley mcp`'s origin

    async def read() -> CallToolResult:
        async with over_http(stack, namesake) as client:
            return await client.call_tool("get_answer", {"question_id": asked["question_id"], "wait_seconds": 0})

    called = run(read)
    assert called.is_error and "no question" in called.content[0].text  # type: ignore[union-attr]
    assert stack.http is not None
    path = f"/api/v1/questions/{asked['question_id']}"
    assert stack.http.get(path, headers=namesake.auth).status_code == 404
    assert stack.http.post(f"{path}/cancel", headers=namesake.auth).status_code == 404
    assert asked["question_id"] not in stack.http.get("/api/v1/questions", headers=namesake.auth).text
    assert stack.status(asked["question_id"]) == "paused"  # still waiting for its own asker


def test_failed_tokens_from_one_address_are_refused_with_429_after_the_limit(stack: SlackStack, token: Token) -> None:
    base = f"http://127.0.0.1:{stack.port}"
    headers = {"Accept": "application/json, text/event-stream"}
    with from_address("127.0.0.3", base) as guesser, from_address("127.0.0.4", base) as bystander:
        guesses = [
            guesser.post("/mcp", json=INIT, headers={**headers, "Authorization": f"Bearer pk_guess-{n}"})
            for n in range(AUTH_FAILURES + 1)
        ]
        assert [r.status_code for r in guesses] == [401] * AUTH_FAILURES + [429]
        refused = guesses[-1]
        assert refused.headers["content-type"] == "application/problem+json"
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert (
            guesser.post("/mcp", json=INIT, headers={**headers, **token.auth}).status_code == 429
        )  # a right guess too
        assert bystander.post("/mcp", json=INIT, headers={**headers, **token.auth}).status_code == 200
