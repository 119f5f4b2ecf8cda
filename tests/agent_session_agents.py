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
