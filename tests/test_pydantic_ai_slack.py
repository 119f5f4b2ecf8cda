"""The Pydantic AI adapter as Slack drives it: signed payloads into `parley serve`, real `parley worker`s.

The Web API is the loopback stand-in. `t-pai-pay` (tests/pai_agents.py) runs a `FunctionModel`
that counts its calls, and its tool counts its runs, in files (tests/effect_counters.py), so
"once" is read from outside every process, a SIGKILLed worker's included. The shipped
`pai_invoice` runs as docs/integrations.md shows it, on the OpenAI-compatible stand-in
(tests/llm_standin.py).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from effect_counters import count
from llm_standin import ChatStandin, call, calls, final, last_tool_result
from pai_agents import payments
from slack_forms import texts
from slack_stack import RunRef, SlackStack
from test_slack_approve import click, submit_view

from workers.agents.pai_invoice import read_outbox

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[1]
USER = "U0BOB"


@pytest.fixture(scope="module")
def standin() -> Iterator[ChatStandin]:
    with ChatStandin() as server:
        yield server


@pytest.fixture(scope="module")
def stack(redis_url: str, standin: ChatStandin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlackStack]:
    env = {
        "PARLEY_AGENTS": "pai_agents",
        "PARLEY_LLM_BASE_URL": standin.base_url,
        "PARLEY_LLM_MODEL": "standin-model",
        "PARLEY_LEASE_TTL": "2",
        "PARLEY_REQUEUE_GRACE": "1",
        "PARLEY_RETRY_DELAYS": "0",
    }
    yield from SlackStack.running(redis_url, tmp_path_factory.mktemp("slack-pai"), workers=1, extra_env=env)


def start(stack: SlackStack, params: dict[str, Any]) -> RunRef:
    return stack.start_run("t-pai-pay", json.dumps(params) + f" {secrets.token_hex(4)}")


def both_questions(stack: SlackStack, run: RunRef) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two approvals, posted before anyone answered, once the run is parked on them."""
    first, second = (stack.question(run, n, wait_open=False) for n in (1, 2))
    stack.wait_status(run, "paused")
    by_payee = {("alice" if "*to*\nalice" in texts(q["blocks"]) else "bob"): q for q in (first, second)}
    return by_payee["alice"], by_payee["bob"]


def done(stack: SlackStack, run: RunRef, timeout: float = 20.0) -> str:
    reply = stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), "the run to finish", timeout)
    return str(reply["text"])


def counted(stack: SlackStack, run: RunRef, *names: str) -> tuple[int, ...]:
    return tuple(count(stack.data_dir, run.run_id, name) for name in names)


def test_two_approvals_post_at_once_park_once_and_resume_once(stack: SlackStack) -> None:
    run = start(stack, {})
    alice, bob = both_questions(stack, run)
    assert "*amount*\n5" in texts(alice["blocks"]) and "*amount*\n7" in texts(bob["blocks"])
    assert counted(stack, run, "exec", "model") == (1, 1)

    form = click(stack, run, alice, "parley_open_form")
    assert form is not None
    submit_view(
        stack,
        form,
        {"to": {"type": "plain_text_input", "value": "alice"}, "amount": {"type": "number_input", "value": "50"}},
    )
    assert stack.status(run.run_id) == "paused"  # one answer of two: still parked
    reject = click(stack, run, bob, "parley_reject")
    assert reject is not None
    submit_view(stack, reject, {"_reason": {"type": "plain_text_input", "value": "bob is blocked"}})

    assert done(stack, run).endswith("pay-alice: paid 50 to alice; pay-bob: bob is blocked")
    assert counted(stack, run, "exec", "model") == (2, 2)  # resumed once; each model call made once
    assert counted(stack, run, "pay.alice", "pay.bob") == (1, 0)  # the rejected tool never ran
    assert payments(stack.data_dir, run.run_id) == [{"to": "alice", "amount": 50}]  # the edit reached the tool


def test_a_worker_killed_between_the_answers_and_the_resume_loses_and_repeats_nothing(stack: SlackStack) -> None:
    run = start(stack, {"hang_on_resume": True})
    alice, bob = both_questions(stack, run)
    click(stack, run, alice, "parley_approve")
    click(stack, run, bob, "parley_approve")
    stack.wait_for("the resumed execution to start", lambda: counted(stack, run, "hung") == (1,))

    [worker] = [p for p in stack.procs if "worker" in " ".join(map(str, p.args)) and p.poll() is None]
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=10)
    stack.spawn_worker("worker-after-kill")

    assert done(stack, run, timeout=40).endswith("pay-alice: paid 5 to alice; pay-bob: paid 7 to bob")
    assert counted(stack, run, "exec", "model") == (3, 2)  # the killed execution called no model
    assert counted(stack, run, "pay.alice", "pay.bob") == (1, 1)
    asked = [m for m in stack.thread(run) if m.get("blocks") and "parley_approve" in json.dumps(m["blocks"])]
    assert len(asked) <= 2  # nothing was asked again


def doc_command(agent: str) -> str:
    """The `/parley <agent> …` line docs/integrations.md shows, as written."""
    text = (ROOT / "docs" / "integrations.md").read_text()
    [line] = re.findall(rf"^/parley {agent} .+$", text, re.MULTILINE)
    return line


def test_pai_invoice_runs_as_docs_integrations_shows_it(stack: SlackStack, standin: ChatStandin) -> None:
    command = doc_command("pai_invoice")
    text = command.removeprefix("/parley pai_invoice ")
    args = {"customer": "ACME Corp", "amount": 1200, "currency": "EUR", "description": "March consulting"}

    def propose(body: dict[str, Any]) -> dict[str, Any]:
        assert body["messages"][-1] == {"role": "user", "content": text}
        [tool] = body["tools"]
        assert tool["function"]["name"] == "send_invoice"
        return calls(call("send_invoice", args, "call-inv-1"))

    standin.add(propose, lambda body: final(f"Done. {last_tool_result(body)}"))
    run = stack.start_run("pai_invoice", text)
    question = stack.question(run, 1, wait_open=False)  # one deferred call: one approval
    stack.wait_status(run, "paused")
    shown = texts(question["blocks"])
    assert "*customer*\nACME Corp" in shown and "*amount*\n1200" in shown

    form = click(stack, run, question, "parley_open_form")
    assert form is not None
    editable = [b["block_id"] for b in form["blocks"] if b["type"] == "input"]
    assert len(editable) == 1 and "amount" in editable[0]  # only the amount may be edited
    submit_view(stack, form, {"amount": {"type": "number_input", "value": "1100"}})

    reply = done(stack, run)
    [invoice] = [i for i in read_outbox(stack.data_dir) if i["run_id"] == run.run_id]
    assert (invoice["customer"], invoice["amount"], invoice["currency"]) == ("ACME Corp", 1100, "EUR")
    assert f"Invoice {invoice['number']} sent to ACME Corp: 1100.00 EUR." in reply
    assert len(standin.requests) == 2 and standin.problems == []
