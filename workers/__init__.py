"""Parley's worker side: the interaction port, durable runs on Redis and RQ, agents.

An agent is a function `fn(run: AgentRun, text: str) -> str` registered with `@agent`.
"""

from workers.agent_run import ABSENT, AgentFn, AgentRun
from workers.registry import agent

__all__ = ["ABSENT", "AgentFn", "AgentRun", "agent"]
