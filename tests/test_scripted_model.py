"""The playground's scripted model: the decisions it makes for `pai_invoice` and `oa_cleanup`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.playground.scripted_model import LABEL, covered, decide
from workers.interaction import Item, ItemType, Request
from workers.llm.replies import SYSTEM, ReplyUnreadable, proposal_of, question_of

pytestmark = pytest.mark.unit


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]


def args(message: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    assert message is not None
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]]


def test_an_invoice_is_read_from_the_text_and_its_result_reported() -> None:
    user = {"role": "user", "content": "Invoice ACME Corp 1200 EUR for March consulting"}
    first = decide({"messages": [user], "tools": tools("send_invoice")})
    sent = {"customer": "ACME Corp", "amount": 1200.0, "currency": "EUR", "description": "March consulting"}
    assert args(first) == [("send_invoice", sent)]
    result = {"role": "tool", "tool_call_id": "call_0_0", "content": "Invoice INV-1 sent to ACME Corp."}
    last = decide({"messages": [user, first, result], "tools": tools("send_invoice")})
    assert last == {"role": "assistant", "content": f"Invoice INV-1 sent to ACME Corp. {LABEL}"}


@pytest.mark.parametrize(
    ("request_text", "path", "expected"),
    [
        ("delete the temporary files", "tmp/build.tmp", True),
        ("delete the temporary files", "notes.txt", False),
        ("delete notes.txt.", "notes.txt", True),
        ("delete notes.txt.bak", "notes.txt", False),
        ("delete a", "a", True),
        ("delete data", "a", False),
        ("remove all files", "notes.txt", True),
    ],
)
def test_a_file_is_deleted_only_when_the_request_covers_it(request_text: str, path: str, expected: bool) -> None:
    assert covered(request_text, path) is expected


def test_an_agent_it_has_no_script_for_is_refused() -> None:
    assert decide({"messages": [{"role": "user", "content": "hi"}], "tools": tools("ask_user")}) is None


def _read(request: Request, reply: str) -> dict[str, Any]:
    """What the scripted model reads of `reply`, through the same prompt `PARLEY_LLM_ANSWERS` sends."""
    document = json.dumps({"question": question_of(request), "reply": reply})
    message = decide({"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": document}]})
    assert message is not None
    said: dict[str, Any] = json.loads(message["content"])
    return said


def test_a_reply_is_read_by_its_words_and_an_unclear_one_is_not() -> None:
    colour = Item(id="colour", text="Colour", type=ItemType.SELECT, options=["Red", "Green", "Blue"])
    count = Item(id="count", text="How many", type=ItemType.NUMBER, integer=True)
    request = Request(reason="Pick", items=[colour, count])
    assert _read(request, "green, and 3 of them") == {"answers": {"colour": "Green", "count": 3}}
    assert "unreadable" in _read(request, "whatever you think")
    approval = Request(
        reason="Scale?",
        items=[Item(id="_decision", text="Decision", type=ItemType.SELECT, options=["approve", "reject"])],
        approval={"action": "Scale api", "args": {}},
    )
    read = _read(approval, "no, don't approve")  # read as "approve" by its words: Parley's own check refuses it
    with pytest.raises(ReplyUnreadable, match="plainly"):
        proposal_of(approval, "no, don't approve", json.dumps(read))
