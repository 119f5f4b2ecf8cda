"""The agent registry: `@agent("name")` makes a function runnable by Parley."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from workers.agent_run import AgentFn
from workers.exceptions import ConfigError, UnknownAgent

BUILTIN_MODULES = (
    "workers.agents.ticket",
    "workers.agents.deploy",
    "workers.agents.assistant",
    "workers.agents.release",
    "workers.agents.pai_invoice",
    "workers.agents.oa_cleanup",  # offered where the `openai-agents` extra is installed
    "workers.agents.lg_refund",  # with the `langgraph` extra
    "workers.questions.agent",
)
OPTIONAL_FRAMEWORKS = frozenset({"pydantic_ai", "agents", "langgraph", "langchain", "temporalio"})
"""The packages optional extras install: a shipped agent needing one that is not installed is left out."""


@dataclass(frozen=True)
class AgentSpec:
    name: str
    description: str
    fn: AgentFn
    listed: bool = True  # False: runnable by Parley itself only (the HTTP API's `question`), not offered to people
    usage: str = ""
    """The text the agent needs, as `<service> [version]`; one started with no text is shown this
    instead and nothing starts. Empty: the agent starts without text too."""


class AgentRegistry:
    """Agents by name. One process-wide instance is filled by imports of agent modules."""

    def __init__(self) -> None:
        self._agents: dict[str, AgentSpec] = {}

    def add(self, spec: AgentSpec) -> None:
        self._agents[spec.name] = spec

    def get(self, name: str) -> AgentSpec:
        try:
            return self._agents[name]
        except KeyError:
            raise UnknownAgent(name, self.names()) from None

    def startable(self, name: str) -> AgentSpec:
        """The agent `name` if people may start it; `UnknownAgent` (listing those they may) otherwise."""
        spec = self.get(name)
        if not spec.listed:
            raise UnknownAgent(name, self.names())
        return spec

    def names(self) -> list[str]:
        """The agents people may start (unlisted built-ins are left out)."""
        return sorted(n for n, spec in self._agents.items() if spec.listed)

    def all(self) -> list[AgentSpec]:
        return [self._agents[n] for n in self.names()]


REGISTRY = AgentRegistry()


def agent(name: str, *, description: str = "", listed: bool = True, usage: str = "") -> Callable[[AgentFn], AgentFn]:
    """Register `fn(run, text) -> str` as the agent `name` (`listed=False`: not startable by people).

    `usage` names the text the agent needs (`<service> [version]`): without it, it is not started.
    """
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"agent name {name!r} must be letters, digits, '-' or '_'")

    def register(fn: AgentFn) -> AgentFn:
        described = description or (fn.__doc__ or "").strip()
        REGISTRY.add(AgentSpec(name=name, description=described, fn=fn, listed=listed, usage=usage))
        return fn

    return register


def load_agents(extra_modules: Iterable[str] = ()) -> AgentRegistry:
    """Import the shipped agents and the modules listed in `PARLEY_AGENTS`."""
    for module in (*BUILTIN_MODULES, *extra_modules):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            if module in BUILTIN_MODULES and (exc.name == module or str(exc.name).split(".")[0] in OPTIONAL_FRAMEWORKS):
                continue
            raise ConfigError(f"PARLEY_AGENTS: cannot import {module!r}: {exc}") from exc
    return REGISTRY
