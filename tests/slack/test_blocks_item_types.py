"""Each new item type is drawn with its Slack element: natively in the form, in a message only where Slack allows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from blockcheck import assert_valid_message, assert_valid_view

from bot.slack.blocks_question import modal_view, question_blocks
from workers.interaction import Item, Request

pytestmark = pytest.mark.unit

VALIDATE_BLOCKS = Path("/work/shared/slack/scripts/validate_blocks.py")
REQUEST = Request(
    reason="Deploy checkout",
    items=[
        Item(id="replicas", text="Replicas", type="number", min=1, max=10, integer=True, default=3),
        Item(id="ratio", text="Ratio", type="number", max=1),
        Item(id="go", text="Go ahead?", type="boolean", default=True),
        Item(id="notify", text="Notify?", type="boolean", required=False),
        Item(id="contact", text="Contact", type="email", default="ops@example.com"),
        Item(id="runbook", text="Runbook", type="url"),
        Item(id="at", text="At", type="time", default="09:30"),
        Item(id="start", text="Start", type="datetime", default="2026-12-04T17:30:00Z"),
        Item(id="ticket", text="Ticket", type="free_text", pattern=r"[A-Z]+-\d+", pattern_hint="a key like ABC-1"),
    ],
)


def _inputs(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {b["block_id"].split("|")[-1]: b for b in blocks if b["type"] == "input"}


def test_the_form_uses_each_native_element_with_string_bounds():
    view = modal_view(REQUEST, "iid1")
    assert_valid_view(view)
    inputs = _inputs(view["blocks"])
    kinds = {k: b["element"]["type"] for k, b in inputs.items()}
    assert kinds == {
        "replicas": "number_input",
        "ratio": "number_input",
        "go": "radio_buttons",
        "notify": "checkboxes",
        "contact": "email_text_input",
        "runbook": "url_text_input",
        "at": "timepicker",
        "start": "datetimepicker",
        "ticket": "plain_text_input",
    }
    replicas = inputs["replicas"]["element"]
    assert replicas["is_decimal_allowed"] is False
    assert (replicas["min_value"], replicas["max_value"], replicas["initial_value"]) == ("1", "10", "3")
    assert inputs["ratio"]["element"]["is_decimal_allowed"] is True
    assert inputs["replicas"]["hint"]["text"] == "A whole number from 1 to 10"
    assert [o["text"]["text"] for o in inputs["go"]["element"]["options"]] == ["Yes", "No"]
    assert inputs["go"]["element"]["initial_option"]["value"] == "true"
    assert len(inputs["notify"]["element"]["options"]) == 1 and inputs["notify"]["optional"] is True
    assert inputs["contact"]["element"]["initial_value"] == "ops@example.com"
    assert inputs["at"]["element"]["initial_time"] == "09:30"
    assert inputs["start"]["element"]["initial_date_time"] == 1796405400
    assert inputs["ticket"]["hint"]["text"] == "Expected: a key like ABC-1"


def test_a_message_has_no_modal_only_element():
    blocks = question_blocks(REQUEST, "iid1", assignees=[])
    assert_valid_message(blocks)
    kinds = {k: b["element"]["type"] for k, b in _inputs(blocks).items()}
    assert kinds["replicas"] == kinds["contact"] == kinds["runbook"] == "plain_text_input"
    assert (kinds["go"], kinds["notify"], kinds["at"], kinds["start"]) == (
        "radio_buttons",
        "checkboxes",
        "timepicker",
        "datetimepicker",
    )
    assert _inputs(blocks)["replicas"]["element"]["initial_value"] == "3"


@pytest.mark.skipif(not VALIDATE_BLOCKS.exists(), reason="the shared Slack validator is not on this machine")
@pytest.mark.parametrize("surface", ["blocks", "view"])
def test_the_shared_validator_accepts_both(tmp_path, surface):
    if surface == "blocks":
        doc: dict[str, Any] = {"text": "Deploy checkout", "blocks": question_blocks(REQUEST, "iid1", assignees=[])}
    else:
        doc = {"view": modal_view(REQUEST, "iid1")}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    done = subprocess.run([sys.executable, str(VALIDATE_BLOCKS), str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_locked_message_shows_each_answer_as_people_read_it():
    from bot.slack.blocks_locked import answered_blocks
    from workers.interaction import Answer

    answers = [
        Answer(id="replicas", number=4),
        Answer(id="ratio", number=0.5),
        Answer(id="go", boolean=False),
        Answer(id="notify", boolean=True),
        Answer(id="contact", email="ops@example.com"),
        Answer(id="at", time="09:30"),
    ]
    locked = answered_blocks(REQUEST, answers, answered_by="U0BOB", answered_at=1796405400)
    assert_valid_message(locked)
    shown = [b["text"]["text"] for b in locked if b["type"] == "section"][1:]
    assert shown[:6] == [
        "*Replicas*\n4",
        "*Ratio*\n0.5",
        "*Go ahead?*\nNo",
        "*Notify?*\nYes",
        "*Contact*\nops@example.com",
        "*Runbook*\n_no answer_",
    ]


def test_blockcheck_refuses_a_modal_only_element_in_a_message() -> None:
    from blockcheck import block_errors

    form = modal_view(REQUEST, "iid1")["blocks"]
    problems = block_errors(form, "message")
    assert any("number_input is allowed only in modals" in p for p in problems), problems
    assert block_errors(form, "modal") == []
    number = next(b for b in form if b.get("block_id") == "f|iid1|replicas")
    broken = {**number, "element": {**number["element"], "min_value": 1}}
    assert any("min_value must be a string" in p for p in block_errors([broken], "modal"))
