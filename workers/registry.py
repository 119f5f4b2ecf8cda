"""The agent registry: `@agent("name")` makes a function runnable by Parley."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from workers.agent_run import AgentFn
from workers.exceptions import AgentUnavailable, ConfigError, UnknownAgent
from workers.logs import Log, redacted

log = Log("parley.registry")

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
EXTRAS = {"pai_invoice": "pydantic-ai", "oa_cleanup": "openai-agents", "lg_refund": "langgraph"}
"""The extra each optional shipped agent needs, named when someone starts one that is not installed."""
_AGENT_NAMES = re.compile(r"""\bagent\(\s*["']([A-Za-z0-9_-]+)["']""")


@dataclass(frozen=True)
class AgentSpec:
    name: str
    description: str
    fn: AgentFn
    listed: bool = True  # False: runnable by Parley itself only (the HTTP API's `question`), not offered to people
    usage: str = ""
    """The text the agent needs, as `<service> [version]`; one started with no text is shown this
    instead and nothing starts. Empty: the agent starts without text too."""
    streams: bool = False
    """Its result is an answer in prose: a host that can (Slack) streams it and asks for feedback."""


class AgentRegistry:
    """Agents by name. One process-wide instance is filled by imports of agent modules."""

    def __init__(self) -> None:
        self._agents: dict[str, AgentSpec] = {}
        self._unavailable: dict[str, str] = {}

    def add(self, spec: AgentSpec) -> None:
        self._agents[spec.name] = spec
        self._unavailable.pop(spec.name, None)

    def unavailable(self, name: str, reason: str) -> None:
        """Remember why `name` failed to load, to tell whoever starts it."""
        if name not in self._agents:
            self._unavailable[name] = reason

    def get(self, name: str) -> AgentSpec:
        try:
            return self._agents[name]
        except KeyError:
            if name in self._unavailable:
                raise AgentUnavailable(name, self._unavailable[name], self.names()) from None
            raise UnknownAgent(name, self.names()) from None

    def startable(self, name: str) -> AgentSpec:
        """The agent `name` if people may start it.

        Otherwise `UnknownAgent`, listing those they may.
        """
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


def agent(
    name: str, *, description: str = "", listed: bool = True, usage: str = "", streams: bool = False
) -> Callable[[AgentFn], AgentFn]:
    """Register `fn(run, text) -> str` as the agent `name`.

    `listed=False` means people cannot start it. `usage` names the text the agent needs
    (`<service> [version]`). Without that text, it is not started. `streams`: the result is an
    answer in prose, streamed where the host can.
    """
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"agent name {name!r} must be letters, digits, '-' or '_'")

    def register(fn: AgentFn) -> AgentFn:
        described = description or (fn.__doc__ or "").strip()
        REGISTRY.add(AgentSpec(name=name, description=described, fn=fn, listed=listed, usage=usage, streams=streams))
        return fn

    return register


RESTART = "restart `parley dev` (or the worker and the bot)"
"""How a long-running process picks up an installed extra or a fixed module."""
TRY_AGAIN = "try again"
"""The same for `parley run`, which loads the agents on each start."""


def missing_extra(name: str, extra: str, restart: str = RESTART) -> str:
    """What to do about a shipped agent whose extra is not installed."""
    return (
        f"`{name}` needs the `{extra}` extra, which is not installed here: install `parley-slack[{extra}]` "
        f"(in a clone: `pip install -e '.[{extra}]'`) and {restart}"
    )


def broken_module(name: str, module: str, problem: str, restart: str = RESTART) -> str:
    """What to do about an agent whose module failed to import."""
    return f"`{name}` did not load: its module `{module}` failed to load ({problem}); fix it and {restart}"


def declared_agents(module: str) -> list[str]:
    """The agent names a module registers with `@agent("…")`, read without importing it.

    Empty when its source cannot be found or read.
    """
    try:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec else None
        source = Path(origin).read_text(encoding="utf-8") if origin and origin.endswith(".py") else ""
    except Exception:  # its package fails to import too, or the file cannot be read
        source = ""
    return _AGENT_NAMES.findall(source)


def load_agents(extra_modules: Iterable[str] = (), *, restart: str = RESTART) -> AgentRegistry:
    """Import the shipped agents and the modules listed in `PARLEY_AGENTS`.

    A module that fails to import is logged, and its agents are marked unavailable with the reason.
    So the others keep running. Whoever starts a broken one learns why, and that after a fix they
    must `restart`.
    """
    for module in BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            if exc.name != module and str(exc.name).split(".")[0] not in OPTIONAL_FRAMEWORKS:
                raise ConfigError(f"cannot import the shipped agents' module {module!r}: {exc}") from exc
    for name, extra in EXTRAS.items():
        REGISTRY.unavailable(name, missing_extra(name, extra, restart))
    modules = list(extra_modules)
    with _working_directory_importable(modules):
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as exc:  # any error of the user's module: report it, keep the rest
                problem = redacted(f"{type(exc).__name__}: {exc}")
                names = declared_agents(module)
                log.error(
                    "agent module failed to load; the other agents run",
                    module=module,
                    agents=names or None,
                    error=problem,
                )
                for name in names or [module.rpartition(".")[2]]:  # unread: the agent is likely named as its module
                    REGISTRY.unavailable(name, broken_module(name, module, problem, restart))
    return REGISTRY


@contextmanager
def _working_directory_importable(modules: Sequence[str]) -> Iterator[None]:
    """Let `PARLEY_AGENTS` name `modules` in the working directory.

    A console script's `sys.path` starts at its own folder, not the working directory. The directory
    goes last, so a file there never hides an installed package. It stays there when one of
    `modules` was loaded from it: that module may import a module beside it later, when its agent
    runs. Otherwise it is taken out once the modules are loaded. So a stray file there, named like
    an optional package that is not installed, is not imported later in that package's place.
    """
    try:
        here = os.getcwd()
    except OSError:  # the working directory was removed: nothing there to import
        here = ""
    added = bool(here) and here not in sys.path and "" not in sys.path
    if added:
        sys.path.append(here)
    try:
        yield
    finally:
        if added:
            _drop_last(here)
            if any(_loaded_from(here, module) for module in modules):
                sys.path.append(here)  # last, for the life of the process


def _loaded_from(directory: str, module: str) -> bool:
    """Whether `module` was imported from a file or package directly in `directory`."""
    top = sys.modules.get(module.partition(".")[0])
    file = getattr(top, "__file__", None)
    paths = list(getattr(top, "__path__", None) or ([file] if file else []))  # a package's folders, or its file
    return any(_same(os.path.dirname(path), directory) for path in paths)


def _same(a: str, b: str) -> bool:
    """Whether two paths name the same directory."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # either is gone
        return False


def _drop_last(entry: str) -> None:
    """Remove the last `entry` from `sys.path`: the one appended, should a module have added it too."""
    for i in range(len(sys.path) - 1, -1, -1):
        if sys.path[i] == entry:
            del sys.path[i]
            return
