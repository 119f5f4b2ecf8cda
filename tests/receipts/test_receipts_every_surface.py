"""Every outcome's receipt through every surface, each verified by the CLI and the documented snippet.

One live `parley serve` and one `parley worker` take Slack's signed clicks. Each outcome is
produced once, asked through the API with a webhook: answered, approved, edited, rejected,
declined, expired, cancelled, and each person's answer of an `ask_each` quorum. Each is then
read through every surface of docs/receipts.md:

- the API, `GET /api/v1/questions/{id}/receipt`;
- the webhook's `data.receipt`;
- MCP's `get_answer` (the official SDK's client on `/mcp`, with the asking token);
- the Python clients: `Parley` and `AsyncParley`'s `receipt()` and `outcome().receipt`, and
  the `Decision.receipt` of `approve` (the approvals are asked with it).

MCP's asking tools carry their own question's receipt too: `request_approval` approved, edited
or rejected, and `ask_human` answered or declined, within the call. Every surface's receipt is
the same as the API's, and passes `parley receipts verify` and the snippet of
docs/receipts.md (run with `python -I`, `cryptography` alone).

Cells no surface can fill, by design:
- a quorum's webhook: the API refuses `callback_url` with `quorum` (a Temporal signal carries it);
- a webhook for a question asked over MCP: `ask_human` and `request_approval` take no `callback_url`;
- `approve_tool_use`: Claude Code parses its one text block strictly, so it carries no receipt;
- MCP's asking tools are shown only for what a person does within the call. An expiry or a
  cancel read by `ask_human` goes through `get_answer`'s code, covered in the table above.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import httpx
import pytest
from api_support import Receiver, Token, create_token
from receipt_support import key_files, verified
from receipt_surfaces import (
    CHANNEL,
    api_client,
    fill_modal,
    from_api,
    from_clients,
    from_mcp,
    from_webhook,
    mcp_client,
    message_with,
    posted_blocks,
    press,
)
from slack_stack import SlackStack
from stacks import Stacks

from parley.async_client import AsyncParley
from parley.client import Decision, Parley
from workers.interaction.elicitation import content_shape
from workers.receipts import KeyRing, Signer
from workers.receipts.canonical import blocks_digest, digest

pytestmark = pytest.mark.system

USER, DAVE = "U0CAROL", "U0DAVE"
TOKEN = "every-surface"
ARGS = {"service": "api", "note": "nightly", "replicas": 3}
EDITED = {**ARGS, "note": "weekly"}
SHIP = [
    {"id": "ship", "text": "Ship", "type": "select", "options": ["yes", "no"]},
    {"id": "count", "text": "How many", "type": "number", "integer": True},
]
SHIPPED = [{"item": "ship", "value": "yes"}, {"item": "count", "value": 3}]
GO = {"type": "object", "properties": {"go": {"type": "boolean", "title": "Go ahead?"}}, "required": ["go"]}
Keys = tuple[Signer, Path, Path]


@dataclass(frozen=True)
class Row:
    """One outcome, as its receipt's predicate must say it."""

    outcome: str
    event: str  # the webhook's event type
    who: tuple[str, ...]  # who answered: one person, or each of a quorum's
    origin: str = "api"
    answers: list[dict[str, Any]] | None = field(default_factory=list)  # None: an approval's, said by `approved`
    approved: dict[str, Any] | None = None  # the arguments approved, for an approval


ROWS = {
    "answered": Row("answered", "answered", (USER,), answers=SHIPPED),
    "approved": Row("approved", "answered", (USER,), answers=None, approved=ARGS),
    "edited": Row("edited", "answered", (USER,), answers=None, approved=EDITED),
    "rejected": Row("rejected", "answered", (USER,), answers=None, approved=ARGS),
    "declined": Row("declined", "cancelled", (USER,)),
    "expired": Row("expired", "expired", ("parley",)),
    "cancelled": Row("cancelled", "cancelled", (TOKEN,)),
    "each person's answer of a quorum": Row("answered", "answered", (USER, DAVE), answers=SHIPPED),
}
MCP_ROWS = {
    "request_approval approved": Row("approved", "answered", (USER,), "mcp", answers=None, approved=ARGS),
    "request_approval edited": Row("edited", "answered", (USER,), "mcp", answers=None, approved=EDITED),
    "request_approval rejected": Row("rejected", "answered", (USER,), "mcp", answers=None, approved=ARGS),
    "ask_human answered": Row("answered", "answered", (USER,), "mcp", answers=[{"item": "go", "value": True}]),
    "ask_human declined": Row("declined", "cancelled", (USER,), "mcp"),
}


@dataclass
class Made:
    """A question closed with one outcome, and what its asking surface returned."""

    qid: str
    decision: Decision | None = None  # `approve`'s
    asked: dict[str, Any] | None = None  # an MCP asking tool's structured result


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return key_files(tmp_path_factory.mktemp("receipt-keys"))


@pytest.fixture(scope="module")
def hooks() -> Iterator[Receiver]:
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def stack(redis_url: str, keys: Keys, hooks: Receiver, stacks: Stacks) -> SlackStack:
    env = {
        "PARLEY_RECEIPT_KEY": str(keys[1]),
        "PARLEY_WEBHOOK_ALLOW": f"127.0.0.1:{urlsplit(hooks.url('x')).port}",
        "PARLEY_API_RATE_LIMIT": "100000",
    }
    return stacks(redis_url=redis_url, workers=1, extra_env=env)


@pytest.fixture(scope="module")
def token(stack: SlackStack) -> Token:
    return create_token(stack, TOKEN)


def _approve(stack: SlackStack, token: Token, hooks: Receiver, how: str, act: Callable[[dict[str, Any]], None]) -> Made:
    """An approval asked with `approve` (`AsyncParley`'s for a rejection), decided by `act` on its message."""
    action, url, decided = f"Deploy api ({how})", hooks.url(how), []
    kwargs: dict[str, Any] = {"channel": CHANNEL, "editable": ["note"], "assignees": [USER], "callback_url": url}

    def ask() -> None:
        if how == "rejected":

            async def asynchronously() -> Decision:
                async with AsyncParley(str(stack.http.base_url), token.token) as python:  # type: ignore[union-attr]
                    return await python.approve(action, ARGS, timeout=40, **kwargs)

            decided.append(asyncio.run(asynchronously()))
        else:
            with Parley(str(stack.http.base_url), token.token) as python:  # type: ignore[union-attr]
                decided.append(python.approve(action, ARGS, timeout=40, **kwargs))

    asking = threading.Thread(target=ask)
    asking.start()
    message = message_with(stack, action, "parley_approve")
    act(message)
    asking.join(timeout=60)
    [decision] = decided
    _, event = from_webhook(stack, hooks, how)  # the API question's id: `approve` returns the decision alone
    return Made(str(event["run_id"]), decision=decision)


def _question(client: httpx.Client, hooks: Receiver | None, name: str, request: dict[str, Any], **more: Any) -> str:
    body = {"request": request, "channel": CHANNEL, **more}
    if hooks is not None:
        body["callback_url"] = hooks.url(name)
    created = client.post("/questions", json=body)
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _mcp_asked(stack: SlackStack, token: Token, tool: str, args: dict[str, Any], act: Callable[[], None]) -> Made:
    """`tool` called over `/mcp` while a person decides in Slack (`act`): its result, with the decision."""
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with mcp_client(stack, token) as client:

            async def call() -> None:
                got["result"] = await client.call_tool(tool, {**args, "wait_seconds": 45})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.to_thread.run_sync(act)

    anyio.run(scenario)
    assert not got["result"].is_error, got["result"].content
    result = dict(got["result"].structured_content or {})
    return Made(result["question_id"], asked=result)


def _deciding(stack: SlackStack) -> dict[str, Callable[[dict[str, Any]], None]]:
    """How the approver approves, edits or rejects an approval's message."""
    return {
        "approved": lambda m: press(stack, m, "parley_approve", USER),
        "edited": lambda m: fill_modal(stack, m, "parley_open_form", USER, {"Note": "weekly"}),
        "rejected": lambda m: fill_modal(stack, m, "parley_reject", USER, {"Reason": "not during the freeze"}),
    }


def _asked_through_the_api(stack: SlackStack, token: Token, hooks: Receiver) -> dict[str, Made]:
    """The questions' outcomes, each asked with `POST /questions` (and a webhook where one may be)."""
    out: dict[str, Made] = {}
    assert stack.http is not None
    with api_client(stack, token) as client:
        expiring = {"reason": "Expire quietly?", "items": [{"id": "ok", "text": "OK", "type": "boolean"}]}
        out["expired"] = Made(_question(client, hooks, "expired", {**expiring, "expires_in": 1}))
        out["answered"] = Made(_question(client, hooks, "answered", {"reason": "Ship the release?", "items": SHIP}))
        shipped = {"Ship": "yes", "How many": "3"}
        press(stack, message_with(stack, "Ship the release?", "parley_submit"), "parley_submit", USER, shipped)
        shape = {"elicitation": content_shape(GO)}  # asked as an MCP elicitation: it offers "Decline"
        declined = {"reason": "Take the pager?", "items": [{"id": "go", "text": "Go ahead?", "type": "boolean"}]}
        out["declined"] = Made(_question(client, hooks, "declined", {**declined, "assignees": [USER]}, metadata=shape))
        press(stack, message_with(stack, "Take the pager?", "parley_decline"), "parley_decline", USER)
        out["cancelled"] = Made(_question(client, hooks, "cancelled", {"reason": "Cancel me?", "items": SHIP}))
        assert client.get(f"/questions/{out['cancelled'].qid}/receipt").status_code == 409  # still waiting
        assert client.post(f"/questions/{out['cancelled'].qid}/cancel").status_code == 200
        quorum = {"reason": "Sign off the release?", "items": SHIP, "assignees": [USER, DAVE]}
        hooked = {"request": quorum, "channel": CHANNEL, "quorum": 2, "callback_url": hooks.url("quorum")}
        refused = client.post("/questions", json=hooked)
        assert refused.status_code == 422 and "no webhook" in refused.text  # the webhook's cell, empty by design
        out["each person's answer of a quorum"] = Made(_question(client, None, "quorum", quorum, quorum=2))
        shared = message_with(stack, "Sign off the release?", "parley_submit")
        for person in (USER, DAVE):
            press(stack, shared, "parley_submit", person, shipped)
    return out


def _asked_over_mcp(stack: SlackStack, token: Token) -> dict[str, Made]:
    """What a person does while an MCP asking tool waits: approve, edit, reject; answer, decline."""
    out: dict[str, Made] = {}
    for how, act in _deciding(stack).items():
        action = f"Scale api (mcp {how})"
        args = {"channel": CHANNEL, "action": action, "args": ARGS, "assignees": [USER]}
        decide = lambda a=action, act=act: act(message_with(stack, a, "parley_approve"))  # noqa: E731
        out[f"request_approval {how}"] = _mcp_asked(stack, token, "request_approval", args, decide)
    for how, act in (
        ("answered", lambda m: press(stack, m, "parley_submit", USER, {"Go ahead?": "Yes"})),
        ("declined", lambda m: press(stack, m, "parley_decline", USER)),
    ):
        text = f"Roll the dice ({how})?"
        args = {"channel": CHANNEL, "message": text, "requested_schema": GO, "assignees": [USER]}
        decide = lambda t=text, act=act: act(message_with(stack, t, "parley_decline"))  # noqa: E731
        out[f"ask_human {how}"] = _mcp_asked(stack, token, "ask_human", args, decide)
    return out


@pytest.fixture(scope="module")
def made(stack: SlackStack, token: Token, hooks: Receiver) -> dict[str, Made]:
    """Every outcome, each produced once."""
    out = _asked_through_the_api(stack, token, hooks)
    out.update({how: _approve(stack, token, hooks, how, act) for how, act in _deciding(stack).items()})
    out.update(_asked_over_mcp(stack, token))
    return out


def check(p: dict[str, Any], row: Row, stack: SlackStack) -> None:
    """The predicate says what `row` says, and the digest of the blocks Slack was sent."""
    assert (p["outcome"], p["question"]["origin"]) == (row.outcome, row.origin) and p["who"]["user"] in row.who
    if row.answers is not None:
        assert p["answers"] == row.answers
    if row.outcome == "cancelled":  # by the asking token, which is what the receipt attests
        assert p["who"]["token"] is True and "API token" in p["who"]["attests"]
    if row.approved is not None:
        assert p["approval"]["arguments_digest"] == digest(row.approved)
        assert p["approval"]["proposed_digest"] == digest(ARGS)
    if not p["question"]["group"]:  # a quorum's people share one message, posted under the group's id
        shown = blocks_digest(posted_blocks(stack, p["question"]["id"]))
        assert p["question"]["shown_digest"] == {"sha256": shown}


@pytest.mark.parametrize("name", list(ROWS))
def test_each_outcome_reads_the_same_verified_receipt_through_every_surface(
    stack: SlackStack, token: Token, hooks: Receiver, keys: Keys, made: dict[str, Made], tmp_path: Path, name: str
) -> None:
    row, question = ROWS[name], made[name]
    api = from_api(stack, token, question.qid)
    surfaces: dict[str, dict[str, Any] | None] = {"api": api}
    if name != "each person's answer of a quorum":
        event, surfaces["webhook"] = from_webhook(stack, hooks, name)
        assert event == f"question.{row.event}"
    mcp = from_mcp(stack, token, question.qid)
    surfaces["mcp get_answer"] = mcp.get("receipt")
    surfaces.update(from_clients(stack, token, question.qid))
    if question.decision is not None:
        surfaces["approve().receipt"] = question.decision.receipt
    assert {k: v == api for k, v in surfaces.items()} == {k: True for k in surfaces}  # one receipt, however read
    copies = {k: v for k, v in surfaces.items() if v is not None}
    for predicates in verified(copies, keys[2], KeyRing([keys[0].public]), tmp_path / "receipts.json").values():
        for p in predicates:
            check(p, row, stack)
        assert sorted(p["who"]["user"] for p in predicates) == sorted(row.who)  # a quorum: each person's own
    if row.outcome == "declined":
        assert mcp["status"] == "cancelled" and mcp["cancelled_by"] == USER


@pytest.mark.parametrize("name", list(MCP_ROWS))
def test_mcps_asking_tools_return_their_own_questions_verified_receipt(
    stack: SlackStack, token: Token, keys: Keys, made: dict[str, Made], tmp_path: Path, name: str
) -> None:
    question = made[name]
    assert question.asked is not None and question.asked["status"] != "waiting"
    receipt = question.asked.get("receipt")
    assert receipt is not None, f"{name.split()[0]}'s result carries no receipt: {question.asked}"
    assert receipt == from_api(stack, token, question.qid) == from_mcp(stack, token, question.qid)["receipt"]
    [[p]] = verified({name: receipt}, keys[2], KeyRing([keys[0].public]), tmp_path / "receipts.json").values()
    check(p, MCP_ROWS[name], stack)
