"""`run.approve` with arguments past the 2,000 characters an approval binds, on real Redis and RQ.

The long value is shown in part (a note, its start, its sha256), bound by that digest and not
editable. The person edits a short argument and approves. The agent gets the decision with the long
value whole and the edit applied, and acts once on it. An answer to the value shown in part is
refused. A change past the part shown voids the answer, as any change to an approval's args does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from effect_counters import counter_path
from redis import Redis
from runtime_helpers import paused, runtime_and_host, start, work
from test_wide_and_long_approvals import assert_shown_in_part

from workers import AgentRun, agent
from workers.interaction import Answer
from workers.interaction.approval import approval_answers
from workers.interaction.context import CONTEXT_MAX, canonical
from workers.runtime.acceptance import AcceptRefused, accept
from workers.runtime.wiring import Runtime
from workers.store.records import InterruptRecord, RunStatus

pytestmark = pytest.mark.integration

LONG_TEXT = "".join(f"line {n:04d}\n" for n in range(500))
"""5,000 characters: more than the 2,000 an approval binds whole."""
PROPOSED: dict[str, dict[str, Any]] = {}
"""Run id -> the args its agent proposes now; a test changes them between executions."""


def saved(data_dir: Path, run_id: str) -> list[dict[str, Any]]:
    """The args each save of `t-approve-long` acted on, in order: one line per save."""
    path = counter_path(data_dir, run_id, "saved.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _save(run: AgentRun, args: dict[str, Any]) -> None:
    path = counter_path(run.data_dir, run.run_id, "saved.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(args) + "\n")


@agent("t-approve-long", description="Asks to approve saving 5,000 characters of notes, then saves them once")
def approve_long(run: AgentRun, text: str) -> str:
    args = PROPOSED.get(run.run_id, {"path": "notes.txt", "text": LONG_TEXT})
    decision = run.approve("Save notes", args, key="save")
    if decision.approved:
        run.step("save", lambda: _save(run, decision.args))
    changed = run.context_changed("save")
    return f"approved={decision.approved} edited={decision.edited} changed={changed} {decision.args['path']}"


def asked(rt: Runtime, run_id: str) -> InterruptRecord:
    question = rt.store.interrupt(paused(rt, run_id))
    assert question is not None and question.request.approval is not None
    return question


def test_a_5000_character_argument_is_shown_in_part_and_the_decision_holds_it_whole(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-approve-long")
    work(rt)
    question = asked(rt, run_id)
    approval = question.request.approval
    assert approval is not None and approval.editable == ["path"]  # the long text is not editable
    assert len(canonical(approval.args)) <= CONTEXT_MAX
    assert_shown_in_part(approval.args["text"], LONG_TEXT)
    assert question.context == approval.args  # bound to the args as shown
    assert len(host.questions) == 1

    tampered = [*approval_answers(question.request, [], approve=True), Answer(id="text", free_text="rm -rf /")]
    with pytest.raises(AcceptRefused, match="unknown item id 'text'"):
        accept(rt, question.id, "U1", tampered)
    edit = [Answer(id="path", free_text="edited.txt")]
    accept(rt, question.id, "U1", approval_answers(question.request, edit, approve=True))
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == "approved=True edited=True changed=False edited.txt"
    assert saved(tmp_path, run_id) == [{"path": "edited.txt", "text": LONG_TEXT}]  # once, the text whole


def test_a_change_past_the_part_shown_voids_the_answer_and_asks_again(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-approve-long")
    work(rt)
    first = asked(rt, run_id)
    changed = LONG_TEXT[:-10] + "line 9999\n"  # past the part shown: only the digest tells
    PROPOSED[run_id] = {"path": "notes.txt", "text": changed}
    accept(rt, first.id, "U1", approval_answers(first.request, [], approve=True))
    work(rt)

    again = asked(rt, run_id)
    assert again.id != first.id and [c.field for c in again.context_changes] == ["text"]
    assert saved(tmp_path, run_id) == []  # nothing acted on the stale approval
    accept(rt, again.id, "U1", approval_answers(again.request, [], approve=True))
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == "approved=True edited=False changed=True notes.txt"
    assert saved(tmp_path, run_id) == [{"path": "notes.txt", "text": changed}]
