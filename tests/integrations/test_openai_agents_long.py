"""OpenAI Agents SDK tool calls whose arguments pass the 2,000 characters an approval binds.

The SDK runs its own code on the scripted `Model` (tests/oa_agents.py). A `save_notes` call with
5,000 characters of text is asked with the text shown in part (a note, its start, its sha256),
bound by that digest, nothing editable. Once approved, the tool runs once with the text whole.
One call is one approval (`run.approve`); two in one reply are asked at once (`run.ask_all`).
"""

from __future__ import annotations

from pathlib import Path

import oa_agents
import pytest
from effect_counters import count
from oa_agents import LONG_TEXT, saved
from redis import Redis
from runtime_helpers import runtime_and_host, start, work
from test_wide_and_long_approvals import assert_shown_in_part, members

from workers.interaction import Answer
from workers.interaction.approval import DECISION_ID, REASON_ID, approval_answers
from workers.interaction.context import CONTEXT_MAX, canonical
from workers.runtime.acceptance import AcceptRefused, accept
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

assert oa_agents.long_notes  # registers the `oa-long` agent


@pytest.mark.parametrize("calls", [1, 2])
def test_a_5000_character_tool_argument_is_shown_in_part_and_the_tool_runs_once_with_it_whole(
    r: Redis, tmp_path: Path, calls: int
) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "oa-long", {"calls": calls})
    work(rt)
    asked = members(rt, run_id)
    assert sorted(asked) == [f"oa:1:call_{n}" for n in range(calls)]
    for question in asked.values():
        approval = question.request.approval
        assert approval is not None and approval.action == "save_notes"
        assert approval.editable == [] and [i.id for i in question.request.items] == [DECISION_ID, REASON_ID]
        assert len(canonical(approval.args)) <= CONTEXT_MAX
        assert_shown_in_part(approval.args["text"], LONG_TEXT)
        assert question.context == approval.args  # bound to the args as shown

    first = asked["oa:1:call_0"]
    tampered = [*approval_answers(first.request, [], approve=True), Answer(id="text", free_text="rm -rf /")]
    with pytest.raises(AcceptRefused, match="unknown item id 'text'"):
        accept(rt, first.id, "U1", tampered)
    for question in asked.values():
        accept(rt, question.id, "U1", approval_answers(question.request, [], approve=True))
    work(rt)

    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == "; ".join(f"call_{n}: saved 5000 characters to notes-{n}.txt" for n in range(calls))
    ran = sorted(saved(tmp_path, run_id), key=lambda s: s["path"])
    assert ran == [{"path": f"notes-{n}.txt", "text": LONG_TEXT} for n in range(calls)]  # once each, the text whole
    assert count(tmp_path, run_id, "model") == 2  # each scripted reply asked for once
