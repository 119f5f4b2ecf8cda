"""The agent of the Redis failover test (`PARLEY_AGENTS=slack_agents,ha_agents`): counted effects around a question.

`before` is a step and `after` a `once` effect; each bumps a counter file outside Redis, so
the test sees any repetition, even by an execution whose record a failover lost.
"""

from __future__ import annotations

from typing import Any

from effect_counters import bump
from slack_agents import form_request, params

from workers import agent
from workers.runtime.run import execution_of


@agent("s-effects", description="A counted step, the s-form question, then a counted once-only effect")
def effects_agent(run: Any, text: str) -> str:
    run.step("before", lambda: bump(run.data_dir, run.run_id, "before"))
    answers = run.ask(form_request(params(text)))
    execution_of(run).once("after", lambda: bump(run.data_dir, run.run_id, "after"))
    return f"colour {answers['colour']}"
