"""The run's three parts stay apart: the author's `Run`, the host's views and the `Execution`.

An agent's `run` offers the `AgentRun` members and nothing more, so the journal and fenced
writes are out of an author's reach. A host's view offers what `PausingRun` names.
"""

from __future__ import annotations

import inspect

import pytest

from workers import AgentRun
from workers.interaction import PausingRun
from workers.runtime.execution import Execution
from workers.runtime.host_view import EachView, HostView
from workers.runtime.run import Run

pytestmark = pytest.mark.unit


def _public(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def test_the_authors_run_offers_the_agent_api_alone() -> None:
    assert _public(Run) == _public(AgentRun)


@pytest.mark.parametrize("view", [HostView, EachView])
def test_a_hosts_view_offers_what_a_pausing_run_names(view: type) -> None:
    assert _public(view) == _public(PausingRun)


def test_the_execution_offers_no_agent_api() -> None:
    """What an author calls lives on `Run`; the execution has only `step`, which `Run.step` uses."""
    assert _public(Execution) & _public(AgentRun) == {"run_id", "started_by", "step"}
