"""Approvals past the form's limit and the binding's, through the Pydantic AI and LangGraph adapters.

A tool call with nine arguments is asked with the first eight editable and all nine shown. One whose
arguments exceed the 2,000 characters an approval binds is asked with the long value shown in part
and bound by its digest. Either way the tool runs once, with the whole arguments and the edits.
Real Redis and RQ, Pydantic AI's `FunctionModel`, real LangGraph on SQLite, the recording host.
"""

from __future__ import annotations

import json
from pathlib import Path

import langgraph_agents  # registers lg-wide-long
import pytest
from effect_counters import count
from langgraph_agents import LONG_BODY, WIDE_ARGS
from pai_agents import LONG_TEXT, WIDE, effects
from redis import Redis
from runtime_helpers import paused, runtime_and_host, start, work

from workers.interaction import Answer
from workers.interaction.approval import MAX_EDITABLE, approval_answers
from workers.interaction.context import CONTEXT_MAX, canonical
from workers.runtime.acceptance import accept
from workers.runtime.wiring import Runtime
from workers.store.records import InterruptRecord, RunStatus

pytestmark = pytest.mark.integration

assert langgraph_agents  # imported for its agents


def members(rt: Runtime, run_id: str) -> dict[str, InterruptRecord]:
    """The questions the run waits on, by ask key: a group's, or the one question on its own."""
    record = rt.store.get(run_id)
    assert record.status is RunStatus.PAUSED, (record.status, record.error)
    group = rt.store.groups.group(record.interrupt)
    if group is None:
        question = rt.store.interrupt(record.interrupt)
        assert question is not None
        return {question.key: question}
    return {m.key: m for m in rt.store.groups.members(group)}


def approve(rt: Runtime, question: InterruptRecord, edits: list[Answer]) -> None:
    accept(rt, question.id, "U1", approval_answers(question.request, edits, approve=True))


def assert_shown_in_part(shown: str, whole: str) -> None:
    """`shown` is `whole` shown in part: the note, its start, and its sha256."""
    assert shown.startswith("(shown in part: the first ") and f" of {len(whole):,} characters) " in shown
    start = shown.split(" characters) ", 1)[1].split("… (sha256 ")[0]
    assert 100 < len(start) < len(whole) and whole.startswith(start)
    assert shown.endswith(")") and len(shown.rsplit("sha256 ", 1)[1]) == 64 + 1


def test_a_nine_argument_pydantic_ai_approval_is_asked_and_the_tool_runs_once_with_the_edit(
    r: Redis, tmp_path: Path
) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-pai-wide", {})
    work(rt)
    [question] = members(rt, run_id).values()
    approval = question.request.approval
    assert approval is not None and approval.args == WIDE  # every argument shown
    assert approval.editable == list(WIDE)[:MAX_EDITABLE]  # the first eight editable, `due` not

    approve(rt, question, [Answer(id="title", free_text="title as edited")])
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "filed title as edited"), record.error
    assert effects(tmp_path, run_id) == [{**WIDE, "title": "title as edited"}]  # ran once, with all nine


@pytest.mark.parametrize("calls", [1, 2])
def test_a_5000_character_pydantic_ai_argument_is_shown_in_part_and_the_tool_runs_once_with_it_whole(
    r: Redis, tmp_path: Path, calls: int
) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-pai-long", {"calls": calls})
    work(rt)
    asked = members(rt, run_id)  # one question alone (`run.approve`), or two at once (`run.ask_all`)
    assert len(asked) == calls
    for question in asked.values():
        approval = question.request.approval
        assert approval is not None and approval.editable == ["path"]  # the long text is not editable
        assert len(canonical(approval.args)) <= CONTEXT_MAX
        assert_shown_in_part(approval.args["text"], LONG_TEXT)
        assert question.context == approval.args  # bound to the args as shown

    first, *rest = sorted(asked.values(), key=lambda q: q.key)
    approve(rt, first, [Answer(id="path", free_text="edited.txt")])
    for question in rest:
        approve(rt, question, [])
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    expected = [{"path": "edited.txt", "text": LONG_TEXT}, *[{"path": "notes-1.txt", "text": LONG_TEXT}] * (calls - 1)]
    assert sorted(effects(tmp_path, run_id), key=lambda e: e["path"]) == expected  # once each, the text whole


def published(rt: Runtime, tmp_path: Path, run_id: str) -> dict[str, str]:
    assert count(tmp_path, run_id, "published") == 1
    return dict(json.loads((tmp_path / "counters" / f"{run_id}.published-args").read_text()))


def test_a_nine_argument_langgraph_review_is_asked_and_resumed_with_the_edit(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "lg-wide-long", {})
    work(rt)
    question = rt.store.interrupt(paused(rt, run_id))
    assert question is not None and question.request.approval is not None
    assert question.request.approval.args == WIDE_ARGS
    assert question.request.approval.editable == list(WIDE_ARGS)[:MAX_EDITABLE]

    approve(rt, question, [Answer(id="owner", free_text="owner as edited")])
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "published with 9 arguments"), record.error
    assert published(rt, tmp_path, run_id) == {**WIDE_ARGS, "owner": "owner as edited"}


def test_a_5000_character_langgraph_argument_is_shown_in_part_and_edited_action_holds_it_whole(
    r: Redis, tmp_path: Path
) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "lg-wide-long", {"long": True})
    work(rt)
    question = rt.store.interrupt(paused(rt, run_id))
    assert question is not None and question.request.approval is not None
    assert question.request.approval.editable == ["title"]
    assert_shown_in_part(question.request.approval.args["body"], LONG_BODY)

    approve(rt, question, [Answer(id="title", free_text="Notes, edited")])
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "published with 2 arguments"), record.error
    assert published(rt, tmp_path, run_id) == {"title": "Notes, edited", "body": LONG_BODY}
