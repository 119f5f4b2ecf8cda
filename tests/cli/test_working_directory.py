"""The working directory stays searchable only when the `PARLEY_AGENTS` modules are there.

A console script's `sys.path` does not hold the working directory. Parley adds it, last, while it
imports the agents' modules. When one of them was found there, it stays, so an agent can import a
module beside it as it runs. Otherwise it is taken out, so a stray file there, named like an
optional package that is not installed, is never imported in that package's place later.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from redis import Redis
from terminal_support import TIMEOUT
from test_terminal_command import in_this_folder

pytestmark = pytest.mark.system

ABSENT = "parley_absent_framework"
AGENTS = """from pathlib import Path

import my_helpers  # a sibling module, imported while the agents load
from workers import agent

Path("agents-loaded").write_text(my_helpers.NAME)


@agent("refund", usage="<order id>")
def refund(run, text):
    import my_refunds  # another, imported only as the agent runs

    return my_refunds.refunded(text)
"""
# The `parley` command, then what a worker does later: run an agent, or make an optional import.
# `-P` keeps the working directory off `sys.path`, as the console script's start does.
COMMAND_THEN = f"""import sys
from parley.cli import main
from workers.registry import REGISTRY

code = main(sys.argv[1:])
if "refund" in REGISTRY.names():
    print(REGISTRY.get("refund").fn(None, "A100"))
try:
    import {ABSENT}
except ImportError:
    print("not installed")
sys.exit(code)
"""


def burst_then(redis_url: str, folder: Path, agents: str) -> subprocess.CompletedProcess[str]:
    """`PARLEY_AGENTS=agents parley worker --burst` run from `folder`, then `COMMAND_THEN`'s steps."""
    _, env = in_this_folder(redis_url, folder, agents)
    return subprocess.run(
        [sys.executable, "-P", "-c", COMMAND_THEN, "worker", "--burst"], cwd=folder, env=env,
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_an_agent_in_the_working_directory_imports_a_module_beside_it_as_it_runs(
    r: Redis, redis_url: str, tmp_path: Path
) -> None:
    (tmp_path / "my_agents.py").write_text(AGENTS)
    (tmp_path / "my_helpers.py").write_text('NAME = "helpers"\n')
    (tmp_path / "my_refunds.py").write_text('def refunded(order):\n    return f"Refunded {order}."\n')
    done = burst_then(redis_url, tmp_path, "my_agents")
    assert done.returncode == 0, done
    assert (tmp_path / "agents-loaded").read_text() == "helpers"
    assert done.stdout.splitlines()[0] == "Refunded A100.", done


@pytest.mark.parametrize("agents", ["workers.agents.ticket", ""], ids=["installed", "none"])
def test_with_no_agents_in_the_working_directory_a_stray_module_there_is_not_imported_later(
    r: Redis, redis_url: str, tmp_path: Path, agents: str
) -> None:
    assert importlib.util.find_spec(ABSENT) is None
    (tmp_path / f"{ABSENT}.py").write_text('print("the stray module was imported")\n')
    done = burst_then(redis_url, tmp_path, agents)
    assert done.returncode == 0, done
    assert done.stdout.splitlines() == ["not installed"], done
