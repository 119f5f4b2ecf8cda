"""Agents for the tests of Slack's agent surfaces (session status, stop button, plan)."""

from __future__ import annotations

from typing import Any

from slack_agents import TARGETS, params

from workers.exceptions import AgentError
from workers.interaction import Item, ItemType, Request
from workers.registry import agent


def _pick(run: Any, text: str) -> str:
    p = params(text)
    item = Item(id="target", text="Where should it go?", type=ItemType.SELECT, options=TARGETS)
    answers = run.ask(Request(reason="Choose a target", items=[item], assignees=p.get("assignees", [])))
    return str(answers["target"])


@agent("as-ask-fail", description="Asks for a target, then fails when it goes on")
def ask_fail_agent(run: Any, text: str) -> str:
    target = _pick(run, text)
    raise AgentError(f"{target} is unreachable")


@agent("as-plan", description="Names three steps, fetches, asks for approval, then pays")
def plan_agent(run: Any, text: str) -> str:
    run.plan(["Fetch the invoice", "Approve it", "Pay it"])
    amount = run.step("fetch", lambda: 120)
    target = _pick(run, text)
    run.step("pay", lambda: f"paid {amount} to {target}")
    return f"paid {amount}"


@agent("as-steps", description="Records fifty steps, unnamed, then finishes")
def steps_agent(run: Any, text: str) -> str:
    total = sum(run.step(f"part-{n}", lambda n=n: n) for n in range(50))
    return f"sum {total}"


@agent("as-step-fails", description="Records a step, then one that raises")
def step_fails_agent(run: Any, text: str) -> str:
    run.step("read", lambda: 1)

    def broken() -> int:
        raise AgentError("the ledger is locked")

    return str(run.step("write", broken))


ANSWER = "Here is what I found. " + "The invoice was paid on time, and nothing else is due. " * 20


@agent("as-answer", description="Answers in prose, long enough to stream in several parts", streams=True)
def answer_agent(run: Any, text: str) -> str:
    return ANSWER


@agent("as-done", description="Finishes at once, asking nothing")
def done_agent(run: Any, text: str) -> str:
    return "nothing to ask"
