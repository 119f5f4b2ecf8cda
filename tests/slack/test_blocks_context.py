"""The facts a question is bound to, in Block Kit: "You are deciding on", what changed, superseded.

Every message is checked with `tests/blockcheck.py` (slack_sdk's validators plus the limits it
misses), and agent-supplied field names and values never become markup.
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack import blocks
from bot.slack.blocks_context import superseded_blocks
from workers.interaction import Answer, Request
from workers.interaction.context import canonical, changes

try:
    from tests.blockcheck import assert_valid_message, text_objects
except ImportError:  # tests/ is not a package: pytest puts this directory on sys.path
    from blockcheck import assert_valid_message, text_objects

pytestmark = pytest.mark.unit

IID = "Zx9_k-3mQpL2vR7tY1uW0aBcDeFgHiJkLmNoPqRsTuV"
EVIL = "<!channel> <@U123> & <https://evil|click>"
FACTS = {"service": "api", "version": "v1.4.3", "target": "prod-eu"}
CHANGED = changes({"service": "api", "version": "v1.4.2", "cluster": "eu-1"}, {**FACTS})

FAST = Request(
    reason="Approve the deployment?",
    items=[{"id": "decision", "text": "Decision", "type": "select", "options": ["approve", "reject"]}],
)
FORM = Request(
    reason="Approve the deployment?",
    items=[
        {"id": "decision", "text": "Decision", "type": "select", "options": ["approve", "reject"]},
        {"id": "reason", "text": "Reason", "type": "free_text", "required": False},
    ],
)


def by_id(out: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {b["block_id"].split("|")[0]: b for b in out if "block_id" in b}


def text(block: dict[str, Any]) -> str:
    return "\n".join(o["text"] for o in text_objects(block))


@pytest.mark.parametrize("request_", [FAST, FORM], ids=["one-click", "form"])
def test_the_facts_are_shown_between_who_is_asked_and_the_inputs(request_: Request) -> None:
    out = blocks.question_blocks(request_, IID, version=2, assignees=["U0BOB"], context=FACTS)
    assert_valid_message(out, blocks.fallback_text(request_))
    kinds = [b.get("block_id", "").split("|")[0] for b in out]
    assert kinds.index("qm") + 1 == kinds.index("qx") < kinds.index("qa" if request_ is FORM else "qc")
    facts = by_id(out)["qx"]
    assert facts["block_id"] == f"qx|{IID}|2" and facts["text"]["type"] == "mrkdwn"
    assert text(facts) == "*You are deciding on*\n• service: api\n• version: v1.4.3\n• target: prod-eu"
    assert "qd" not in kinds  # nothing changed: no change list
    plain = blocks.question_blocks(request_, IID, version=2, assignees=["U0BOB"])
    assert "qx" not in [b.get("block_id", "").split("|")[0] for b in plain]


def test_a_question_asked_again_shows_each_change_above_the_facts() -> None:
    out = blocks.question_blocks(FORM, IID, assignees=["U0BOB"], context=FACTS, changes=CHANGED)
    assert_valid_message(out)
    kinds = [b.get("block_id", "").split("|")[0] for b in out]
    assert kinds.index("qd") + 1 == kinds.index("qx")
    assert text(by_id(out)["qd"]).splitlines() == [
        ":warning: *The facts changed since the last answer*, so it no longer applies:",
        "• version: v1.4.2 → v1.4.3",
        "• target: (added) prod-eu",
        "• cluster: eu-1 (removed)",
    ]


def test_field_names_and_values_are_escaped() -> None:
    context = {EVIL: EVIL, "list": [EVIL], "multi\nline": "a\nb"}
    old = {EVIL: "x", "list": []}
    out = blocks.question_blocks(FORM, IID, assignees=[], context=context, changes=changes(old, context))
    assert_valid_message(out)
    shown = text(by_id(out)["qx"]) + text(by_id(out)["qd"])
    assert "<!channel>" not in shown and "<@U123>" not in shown and "<https" not in shown
    assert "&lt;!channel&gt; &lt;@U123&gt; &amp; &lt;https://evil|click&gt;" in shown
    assert "• multi line: a b" in shown  # one line per fact


@pytest.mark.parametrize(
    "context",
    [
        {"notes": "&" * 1988},  # the longest context, every character escaped to five
        {f"f{n:03d}": n for n in range(180)},  # about as many fields as fit
        {"nested": [{"k": "<>" * 10}] * 66},
    ],
    ids=["escaped", "many-fields", "nested"],
)
def test_the_largest_contexts_and_changes_stay_within_block_kit_limits(context: dict[str, Any]) -> None:
    assert len(canonical(context)) <= 2000
    old = {k: "&" * 10 for k in context}
    big = Request(
        reason="R" * 3000, items=[{"id": f"i{n}", "text": "T" * 2000, "type": "free_text"} for n in range(10)]
    )
    for request_ in (FAST, FORM, big):
        out = blocks.question_blocks(request_, IID, assignees=[], context=context, changes=changes(old, context))
        assert_valid_message(out)
        assert all(len(text(b)) <= 3000 for b in out if b["type"] == "section")
    assert_valid_message(superseded_blocks(big, changes(old, context), answered_by="U0BOB"))


def test_the_superseded_message_says_so_and_what_changed() -> None:
    out = superseded_blocks(FORM, CHANGED, answered_by="U0BOB")
    assert_valid_message(out)
    assert not [b for b in out if b["type"] in ("input", "actions")]
    shown = "\n".join(text(b) for b in out)
    assert "*Superseded: the facts changed.* The answer by <@U0BOB> no longer applies" in shown
    assert "*What changed*\n• version: v1.4.2 → v1.4.3\n• target: (added) prod-eu\n• cluster: eu-1 (removed)" in shown


def test_the_answered_message_keeps_the_facts_it_was_given_on() -> None:
    answers = [Answer(id="decision", choice="approve")]
    out = blocks.answered_blocks(FORM, answers, answered_by="U0BOB", answered_at=1_760_000_000, context=FACTS)
    assert_valid_message(out)
    assert "*You are deciding on*\n• service: api" in "\n".join(text(b) for b in out)
    plain = blocks.answered_blocks(FORM, answers, answered_by="U0BOB", answered_at=1_760_000_000)
    assert "You are deciding on" not in "\n".join(text(b) for b in plain)
