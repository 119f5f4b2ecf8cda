"""The working directory is searched for the `PARLEY_AGENTS` modules alone, and only while they load.

A console script's `sys.path` does not hold the working directory. Parley adds it while it imports
the agents' modules, then takes it out. So a stray file there, named like an optional package that
is not installed, is never imported in that package's place by an import made later.
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
    return f"Refunded {text}."
"""
# The `parley` command, then an optional import as an agent or library makes one after start-up.
# `-P` keeps the working directory off `sys.path`, as the console script's start does.
COMMAND_THEN_IMPORT = f"""import sys
from parley.cli import main

code = main(sys.argv[1:])
try:
    import {ABSENT}
except ImportError:
    print("not installed")
sys.exit(code)
"""


def test_a_worker_loads_its_agents_from_the_working_directory_and_no_stray_module_there_later(
    r: Redis, redis_url: str, tmp_path: Path
) -> None:
    assert importlib.util.find_spec(ABSENT) is None
    (tmp_path / "my_agents.py").write_text(AGENTS)
    (tmp_path / "my_helpers.py").write_text('NAME = "helpers"\n')
    (tmp_path / f"{ABSENT}.py").write_text('print("the stray module was imported")\n')
    _, env = in_this_folder(redis_url, tmp_path, "my_agents")
    done = subprocess.run(
        [sys.executable, "-P", "-c", COMMAND_THEN_IMPORT, "worker", "--burst"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done
    assert (tmp_path / "agents-loaded").read_text() == "helpers"
    assert done.stdout.splitlines() == ["not installed"], done
