"""mypy accepts the README's agent examples and refuses typical misuse of the agent API.

The examples are taken from the README's code blocks that define an `@agent`, with the helpers
they call (not Parley's) declared in a prelude. The misuse file marks each line mypy must refuse.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # it runs mypy in a child process

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parents[1] / "typing_cases"
BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)

# The example agents' own helpers: the README leaves them to the reader.
PRELUDE = """\
from typing import Any

orders: dict[str, Any] = {}
def lookup_order(text: str) -> dict[str, Any]: raise NotImplementedError
def issue_refund(order_id: str) -> None: raise NotImplementedError
def current_release(service: str) -> str: raise NotImplementedError
def approval_request(facts: dict[str, str]) -> Request: raise NotImplementedError
def start_deploy(service: str, version: str, target: str, replicas: int) -> None: raise NotImplementedError
"""


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--strict", "--follow-imports=silent", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


def readme_agents() -> list[str]:
    blocks = [re.sub(rf"(?m)^{indent}", "", body) for indent, body in BLOCK.findall((ROOT / "README.md").read_text())]
    return [b for b in blocks if "@agent(" in b]


def test_readme_agent_examples_type_check(tmp_path: Path) -> None:
    examples = readme_agents()
    assert len(examples) >= 3, "the README's agent examples were not found"
    imports = (
        "from workers import AgentRun, agent\n"
        "from workers.interaction import Item, ItemType, Request\n"
        "from workers.llm import Tool, llm_config_from_env, run_loop\n"
    )
    source = imports + PRELUDE + "\n\n".join(_without_imports(e) for e in examples)
    path = tmp_path / "readme_agents.py"
    path.write_text(source)
    result = _mypy(path)
    assert result.returncode == 0, result.stdout + result.stderr


def _without_imports(block: str) -> str:
    kept = [line for line in block.splitlines() if not line.startswith(("from ", "import "))]
    return "\n".join(kept) + "\n"


def test_misuse_fails_type_checking_on_every_marked_line() -> None:
    path = CASES / "misuse.py"
    marked = {n for n, line in enumerate(path.read_text().splitlines(), 1) if "# error:" in line}
    result = _mypy(path)
    assert result.returncode == 1, result.stdout + result.stderr
    reported = {
        int(m) for m in re.findall(rf"^{re.escape(str(path.relative_to(ROOT)))}:(\d+): error", result.stdout, re.M)
    }
    assert marked - reported == set(), f"mypy accepted marked lines {sorted(marked - reported)}:\n{result.stdout}"
    assert reported - marked == set(), f"mypy refused unmarked lines {sorted(reported - marked)}:\n{result.stdout}"
