"""Approvals past the form's limit (more arguments than can be editable) and the binding's (2,000 characters).

More arguments than `MAX_EDITABLE` are all shown, the first `MAX_EDITABLE` editable, unless a caller
names more. Arguments too long to bind whole are shown in part with `in_part`, bound by digest, and
never editable. `approved_args` gives the whole arguments with the edits.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

import workers.interaction.approval as approvals
from workers.interaction import Answer, ContextError, FormError
from workers.interaction.approval import MAX_EDITABLE, approval_answers, approval_request, decision_of
from workers.interaction.context import CONTEXT_MAX, canonical, changes

pytestmark = pytest.mark.unit

NINE = {f"field_{n}": f"value {n}" for n in range(9)}
LONG = "".join(f"line {n:04d}\n" for n in range(500))


def decided(request: Any, edits: list[Answer]) -> Any:
    answers = approval_answers(request, edits, approve=True)
    return decision_of(request, {a.id: a.value for a in answers})


def test_nine_arguments_are_all_shown_with_the_first_eight_editable() -> None:
    request = approval_request("file_ticket", NINE)
    assert request.approval is not None and request.approval.args == NINE
    assert request.approval.editable == list(NINE)[:MAX_EDITABLE] == [f"field_{n}" for n in range(8)]
    decision = decided(request, [Answer(id="field_0", free_text="edited")])
    assert decision.args == {**NINE, "field_0": "edited"} and decision.changes == [("field_0", "value 0", "edited")]


def test_naming_more_than_eight_editable_is_refused_and_fixed_ones_are_never_editable() -> None:
    with pytest.raises(FormError, match="at most 8 arguments can be editable; 9 are named"):
        approval_request("file_ticket", NINE, editable=list(NINE))
    request = approval_request("file_ticket", NINE, fixed=["field_0", "field_1"])
    assert request.approval is not None
    assert request.approval.editable == [f"field_{n}" for n in range(2, 9)]


def test_arguments_too_long_are_refused_saying_so_unless_shown_in_part() -> None:
    args = {"path": "notes.txt", "text": LONG}
    with pytest.raises(ContextError) as refused:
        approval_request("save_notes", args)
    assert str(refused.value) == (
        "the arguments are 5,530 characters of canonical JSON, and an approval shows at most 2,000: pass shorter ones"
    )
    request = approval_request("save_notes", args, in_part=True)
    approval = request.approval
    assert approval is not None and approval.editable == ["path"]  # the text shown in part is never editable
    assert len(canonical(approval.args)) <= CONTEXT_MAX and approval.args["path"] == "notes.txt"
    shown = approval.args["text"]
    whole = hashlib.sha256(json.dumps(LONG).encode()).hexdigest()
    assert shown.startswith("(shown in part: the first ") and shown.endswith(f"… (sha256 {whole})")
    assert " of 5,000 characters) line 0000\nline 0001\n" in shown

    decision = decided(request, [Answer(id="path", free_text="edited.txt")])
    assert decision.args["text"] == shown  # what was shown
    assert approvals.approved_args(decision, args) == {"path": "edited.txt", "text": LONG}  # what runs


def test_a_change_past_the_part_shown_changes_the_binding() -> None:
    before, _ = approvals.shown_in_part({"text": LONG})
    after, _ = approvals.shown_in_part({"text": LONG[:-2] + "!\n"})
    assert canonical(before) != canonical(after)
    assert [c.field for c in changes(before, after)] == ["text"]


def test_the_longest_values_are_shown_in_part_first_and_plain_json_is_still_required() -> None:
    args = {"a": "x" * 1500, "b": "y" * 1600, "c": "z" * 1400, "d": list(range(10))}
    shown, in_part = approvals.shown_in_part(args)
    assert in_part == ["b", "a"] and shown["c"] == args["c"] and shown["d"] == list(range(10))
    assert len(canonical(shown)) <= CONTEXT_MAX
    assert approvals.shown_in_part({"c": "short"}) == ({"c": "short"}, [])
    with pytest.raises(ContextError, match=r"context\.when is a set, which is not JSON"):
        approvals.shown_in_part({"when": {1, 2}, "text": LONG})
    with pytest.raises(ContextError, match="even with their long values shown in part"):
        approvals.shown_in_part({f"k{n}": "z" * 100 for n in range(40)})
