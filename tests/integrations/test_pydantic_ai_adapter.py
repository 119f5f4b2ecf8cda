"""`workers.integrations.pydantic_ai` on real Redis and RQ, with a recording host and a `FunctionModel`.

The Slack end-to-end acceptance is tests/integrations/test_pydantic_ai_slack.py; here the adapter's own
shapes: deferred calls asked at once and read back, replay from the journal, external tools.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from effect_counters import count
from llm_standin import ChatStandin, call, calls, final, last_tool_result
from pai_agents import EARLIER_RECORD, PROPOSED, payments, seen_path, used_path
from redis import Redis
from runtime_helpers import runtime_and_host, start, work
from secret_support import keys_holding

from workers.interaction import Answer, ItemType
from workers.interaction.approval import approval_answers
from workers.interaction.tools import SECRET_PLACEHOLDER
from workers.registry import load_agents
from workers.runtime.acceptance import accept
from workers.runtime.wiring import Runtime
from workers.store.records import InterruptRecord, RunStatus

pytestmark = pytest.mark.integration


def members(rt: Runtime, run_id: str) -> dict[str, InterruptRecord]:
    """The questions the run waits on at once, by ask key: a group's, or the one question on its own."""
    record = rt.store.get(run_id)
    assert record.status is RunStatus.PAUSED, (record.status, record.error)
    group = rt.store.groups.group(record.interrupt)
    if group is None:  # one deferred call is one question, not a group of one
        question = rt.store.interrupt(record.interrupt)
        assert question is not None
        return {question.key: question}
    return {m.key: m for m in rt.store.groups.members(group)}


def decide(
    rt: Runtime, question: InterruptRecord, *, approve: bool, edits: list[Answer] = (), reason: str = ""
) -> None:  # type: ignore[assignment]
    answers = approval_answers(question.request, list(edits), approve=approve, reason=reason or None)
    accept(rt, question.id, "U1", answers)


def test_two_approvals_park_once_and_resume_once_with_an_edit_and_a_rejection(r: Redis, tmp_path: Path) -> None:
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-pai-pay", {})
    work(rt)
    asked = members(rt, run_id)
    assert sorted(asked) == ["pydantic_ai:1:approve.1", "pydantic_ai:1:approve.2"]
    alice, bob = asked["pydantic_ai:1:approve.1"], asked["pydantic_ai:1:approve.2"]
    assert alice.request.approval is not None and alice.request.approval.args == PROPOSED["pay-alice"]
    assert {i.id: i.type.value for i in alice.request.items}["amount"] == "number"  # typed by the tool's schema
    assert len(host.questions) == 2 and count(tmp_path, run_id, "model") == 1

    decide(rt, bob, approve=False, reason="bob is blocked")
    work(rt)
    assert rt.store.get(run_id).status is RunStatus.PAUSED and count(tmp_path, run_id, "exec") == 1
    decide(rt, alice, approve=True, edits=[Answer(id="amount", number=50)])
    work(rt)

    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == "pay-alice: paid 50 to alice; pay-bob: bob is blocked"
    assert count(tmp_path, run_id, "exec") == 2  # parked once, resumed once
    assert count(tmp_path, run_id, "model") == 2  # once per turn, none repeated by the replay
    assert payments(tmp_path, run_id) == [{"to": "alice", "amount": 50}]  # the edit reached it; bob's never ran
    assert count(tmp_path, run_id, "pay.bob") == 0
    journal = rt.store.journal(run_id)
    assert journal["step:pydantic_ai:1"]["v"]["deferred"]["approvals"][0]["tool_call_id"] == "pay-alice"
    assert [m["kind"] for m in journal["step:pydantic_ai:2"]["v"]["messages"]] == [
        "request",
        "response",
        "request",
        "response",
    ]


def test_an_external_tool_is_a_form_prefilled_with_the_model_s_args(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-pai-external", {})
    work(rt)
    [question] = members(rt, run_id).values()
    items: dict[str, Any] = {i.id: (i.type.value, i.default) for i in question.request.items}
    assert items == {
        "street": ("free_text", "1 Main St"),
        "city": ("free_text", "Springfield"),
        "express": ("boolean", False),
    }
    assert question.request.reason == "Where to ship the order"
    given = [
        Answer(id="street", free_text="2 Elm St"),
        Answer(id="city", free_text="Shelbyville"),
        Answer(id="express", boolean=True),
    ]
    accept(rt, question.id, "U1", given)
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == "shipping to {'street': '2 Elm St', 'city': 'Shelbyville', 'express': True}"
    assert count(tmp_path, run_id, "model") == 2


def test_a_run_retried_after_its_tools_ran_repeats_no_tool_and_no_model_call_it_had(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-pai-pay", {"fail_after_tools": True})
    work(rt)
    for question in members(rt, run_id).values():
        decide(rt, question, approve=True)
    work(rt)  # the model fails once after both tools ran; the runtime retries the run, which replays

    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == "pay-alice: paid 5 to alice; pay-bob: paid 7 to bob"
    assert count(tmp_path, run_id, "exec") == 3
    assert (count(tmp_path, run_id, "pay.alice"), count(tmp_path, run_id, "pay.bob")) == (1, 1)
    assert count(tmp_path, run_id, "model") == 3  # the first turn once; the failed call, then its retry


def test_a_model_refusing_the_request_fails_the_run_at_once(r: Redis, tmp_path: Path) -> None:
    rt, _ = runtime_and_host(r, tmp_path, retry_delays=(0.0, 0.0))
    run_id = start(rt, "t-pai-refused", {})
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.FAILED
    assert count(tmp_path, run_id, "exec") == 1  # not retried
    assert "the model refused the request (HTTP 401, model standin-model)" in (record.error or "")


def test_the_docs_snippet_loads_without_a_key_and_runs_on_the_parley_llm_model(
    r: Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/integrations.md's agent, listed in PARLEY_AGENTS with no OPENAI_API_KEY: it loads, and
    runs on the model PARLEY_LLM_* name, as the shipped `pai_invoice` does."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text()
    section = text[text.index("## Pydantic AI") : text.index("## OpenAI Agents SDK")]
    [code] = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    (tmp_path / "refunds_from_the_docs.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert "refunds" in load_agents(["refunds_from_the_docs"]).names()

    proposal = calls(call("refund", {"order": "A-7", "amount": 30}, "call-1"))
    with ChatStandin(proposal, lambda body: final(f"Done: {last_tool_result(body)}")) as model:
        monkeypatch.setenv("PARLEY_LLM_BASE_URL", model.base_url)
        monkeypatch.setenv("PARLEY_LLM_MODEL", "the-teams-model")
        rt, _ = runtime_and_host(r, tmp_path)
        run_id = start(rt, "refunds", "Refund A-7, 30 EUR")
        work(rt)
        [question] = members(rt, run_id).values()
        decide(rt, question, approve=True)
        work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "Done: refunded 30.0 on A-7"), record.error
    assert [body["model"] for body in model.requests] == ["the-teams-model"] * 2 and model.problems == []


def test_a_call_id_a_later_response_uses_again_runs_its_own_tool(r: Redis, tmp_path: Path) -> None:
    """A model numbering call ids per response (`call_0` every turn): each call runs, once."""
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-pai-same-id", {})
    work(rt)
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "result for a | result for b"), record.error
    assert (count(tmp_path, run_id, "lookup.a"), count(tmp_path, run_id, "lookup.b")) == (1, 1)
    tools = sorted(k for k in rt.store.journal(run_id) if ":tool:" in k)
    assert tools == ["step:pydantic_ai:1:model:1:tool:call_0", "step:pydantic_ai:1:model:2:tool:call_0"]


def test_a_tool_result_an_earlier_version_recorded_by_call_id_is_replayed_once(r: Redis, tmp_path: Path) -> None:
    """A run stopped mid-step by an earlier version, its first `call_0` recorded under the id alone:
    that call is not run again, and the later `call_0`, which that version never ran, runs."""
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-pai-same-id", {"earlier_record": True})
    work(rt)
    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == f"{EARLIER_RECORD} | result for b"
    assert (count(tmp_path, run_id, "lookup.a"), count(tmp_path, run_id, "lookup.b")) == (0, 1)


def test_a_secret_an_external_tool_asks_reaches_the_agents_code_but_not_the_model(r: Redis, tmp_path: Path) -> None:
    """docs/llm.md: a secret answer never reaches the model, nor the journal; `run.secret` gives it."""
    rt, _ = runtime_and_host(r, tmp_path, secret_key=Fernet.generate_key().decode())
    run_id = start(rt, "t-pai-secret", {})
    work(rt)
    [question] = members(rt, run_id).values()
    assert [(i.id, i.type) for i in question.request.items] == [("code", ItemType.SECRET)]
    code = f"otp-{secrets.token_hex(10)}"
    accept(rt, question.id, "U1", [Answer(id="code", secret=code)])
    work(rt)

    record = rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    seen = seen_path(tmp_path, run_id).read_text()
    assert code not in seen and SECRET_PLACEHOLDER in seen  # the model read the placeholder only
    assert keys_holding(r, code) == []  # the journal's messages included
    assert record.result == f"vpn_login: {{'code': '{SECRET_PLACEHOLDER}'}} | connect: connected"
    assert used_path(tmp_path, run_id).read_text() == code and count(tmp_path, run_id, "connect") == 1
