"""The playground's scripted model: the decisions it makes for `pai_invoice` and `oa_cleanup`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.playground.scripted_model import LABEL, covered, decide

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
