"""docs/integrations.md's LangGraph section, run as written against a live Parley.

Its blocks are taken in order: the `greeter.py` example is saved under its name and listed in
`PARLEY_AGENTS`; each bash block runs with the workers' `PARLEY_DATA_DIR`; each `/parley` line is
sent as Slack sends a slash command, and the person does what the prose says (lowers the refund to
100 with Edit…; answers "Ada"); each `Done:` block is the reply the run must end with. The
`pip install` line is checked against the extras the installed distribution declares.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from slack_forms import texts
from slack_stack import TESTS, RunRef, SlackStack
from stacks import Stacks
from test_langgraph_slack import final
from test_slack_approve import USER, click, submit_view

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def section(doc: str, title: str) -> str:
    text = (ROOT / doc).read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


BLOCKS = BLOCK.findall(section("docs/integrations.md", "LangGraph"))
MODULES = {m.group(1): code for kind, code in BLOCKS if kind == "python" and (m := re.match(r"# (\w+)\.py\n", code))}


@pytest.fixture(scope="module")
def stack(redis_url: str, tmp_path_factory: pytest.TempPathFactory, stacks: Stacks) -> Iterator[SlackStack]:
    modules = tmp_path_factory.mktemp("doc-modules")
    for name, code in MODULES.items():
        (modules / f"{name}.py").write_text(code)
    env = {
        "PARLEY_AGENTS": ",".join(["slack_agents", *MODULES]),
        "PYTHONPATH": os.pathsep.join([str(modules), str(TESTS)]),
    }
    yield stacks(redis_url=redis_url, workers=1, extra_env=env)


def act(stack: SlackStack, run: RunRef, agent: str) -> None:
    """What the prose tells the person to do with the run's question."""
    if agent == "lg_refund":
        question = stack.question(run, 1)
        assert "Refund order A-1001 for Ann Lee: arrived broken" in texts(question["blocks"])
        form = click(stack, run, question, "parley_open_form")
        assert form is not None
        submit_view(stack, form, {"amount": {"type": "number_input", "value": "100"}})
    elif agent == "greeter":
        question = stack.question(run, 1)
        resp, _ = stack.submit(run, question, {"Name": "Ada"})
        assert resp.status_code == 200 and resp.text == ""
    else:
        pytest.fail(f"the docs start {agent!r}, which this test does not know how to answer")


def test_the_langgraph_section_runs_as_written(stack: SlackStack) -> None:
    assert set(MODULES) == {"greeter"} and len(BLOCKS) >= 6
    env = {**os.environ, "PARLEY_DATA_DIR": str(stack.data_dir)}
    run: RunRef | None = None
    outputs: list[str] = []
    for kind, code in BLOCKS:
        if kind == "bash" and code.startswith("pip install "):
            extra = re.fullmatch(r"pip install -e '\.\[(\w+)\]'\n", code)
            assert extra is not None and extra.group(1) in metadata.metadata("parley-slack").get_all("Provides-Extra")
        elif kind == "bash":
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout)
        elif kind == "text" and code.startswith("/parley "):
            agent, _, text = code.removeprefix("/parley ").strip().partition(" ")
            run = stack.start_run(agent, text, user=USER)
            act(stack, run, agent)
        elif kind == "text" and code.startswith("Done: "):
            assert run is not None
            assert final(stack, run) == f":white_check_mark: {code.strip()}"
    ledger = [line for line in outputs[-1].splitlines() if line]
    assert len(ledger) == 1 and '"order": "A-1001"' in ledger[0] and '"amount": 100' in ledger[0]
