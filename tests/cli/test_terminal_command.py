"""`parley run` end to end in a real pty, against the test Redis (or the embedded one).

The real `parley run ticket ...` command is answered the way a person would: arrow keys,
Space, typed replies, Esc then Enter to finish a multiline answer; what it filed and what
it left in Redis are read back afterwards.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from terminal_support import (
    CLEAR,
    DOWN,
    FINISH,
    TIMEOUT,
    finish,
    parley_command,
    parley_env,
    spawn_run,
    started_run,
    stored_run,
)

from workers.agents.tracker import read_tickets
from workers.store.records import RunStatus

pytestmark = pytest.mark.system


def test_parley_run_ticket_in_a_terminal(redis_url: str, tmp_path: Path) -> None:
    term = spawn_run(redis_url, tmp_path, "ticket", "Create ticket for login issue")
    run_id = started_run(term)
    term.expect_exact("I'm filing a ticket for: Create ticket for login issue")

    term.expect_exact("? Describe the bug")
    term.expect_exact("Esc then Enter")
    term.send("Login fails on Safari.\rThe button does nothing.")
    term.send(FINISH)

    term.expect_exact("? Who is affected?")
    term.send(DOWN)
    term.send("\r")
    term.expect_exact("Who is affected? Some users")

    term.expect_exact("? Severity")
    term.send("2\r")
    term.expect_exact("Severity: High")

    term.expect_exact("? Components")
    term.send(" ")
    term.send(DOWN + DOWN)
    term.send(" ")
    term.send("\r")
    term.expect_exact("Components: Login, Web app")

    term.expect_exact("? Due date")
    term.send("2026-12-01\r")

    term.expect_exact("Done: Created PAR-1: Create ticket for login issue. Severity High, affects Some users")
    assert finish(term) == 0

    tickets = read_tickets(tmp_path / "tickets.jsonl")
    assert len(tickets) == 1
    ticket = tickets[0]
    assert ticket["id"] == "PAR-1"
    assert ticket["run_id"] == run_id
    assert ticket["description"] == "Login fails on Safari.\nThe button does nothing."
    assert (ticket["affected"], ticket["severity"], ticket["due"]) == ("Some users", "sev2", "2026-12-01")
    assert ticket["components"] == ["Login", "Web app"]
    status, events = stored_run(redis_url, run_id)
    assert status is RunStatus.SUCCEEDED
    assert "answered" in events


def test_parley_run_refuses_bad_answers_with_the_reason_and_asks_again(redis_url: str, tmp_path: Path) -> None:
    term = spawn_run(redis_url, tmp_path, "ticket", "Create ticket for login issue")
    run_id = started_run(term)

    term.expect_exact("? Describe the bug")
    term.send(FINISH)  # nothing typed
    term.expect_exact("an answer is required")
    term.send("Nothing happens on submit." + FINISH)

    term.expect_exact("? Who is affected?")
    term.send("\r")  # the default
    term.expect_exact("Who is affected? All users")

    term.expect_exact("? Severity")
    term.send("9\r")
    term.expect_exact("There is no option 9: choose a number from 1 to 4")
    term.send(CLEAR + "high\r")
    term.expect_exact("Severity: High")

    term.expect_exact("? Components")
    term.send("\r")  # nothing ticked
    term.expect_exact("an answer is required: tick at least one")
    term.send("api, mobile\r")
    term.expect_exact("Components: API, Mobile app")

    term.expect_exact("? Due date")
    term.send("2026-13-45\r")
    term.expect_exact("'2026-13-45' is not a date in YYYY-MM-DD form")
    term.send(CLEAR + "\r")  # optional: skip it

    term.expect_exact("Done: Created PAR-1")
    assert finish(term) == 0
    [ticket] = read_tickets(tmp_path / "tickets.jsonl")
    assert ticket["description"] == "Nothing happens on submit."
    assert (ticket["affected"], ticket["severity"], ticket["due"]) == ("All users", "sev2", None)
    assert ticket["components"] == ["API", "Mobile app"]
    assert stored_run(redis_url, run_id)[0] is RunStatus.SUCCEEDED


def test_parley_run_without_redis_url_uses_the_embedded_redis(tmp_path: Path) -> None:
    env = parley_env("", tmp_path)
    del env["REDIS_URL"]
    command = parley_command()
    term = pexpect.spawn(
        command[0], [*command[1:], "run", "deploy", "api v1.4.2"], env=env, encoding="utf-8", timeout=TIMEOUT
    )
    term.expect_exact("You are deciding on:")
    for fact in ("service: api", "version: v1.4.2", "target: production", "replicas: 3"):
        term.expect_exact(fact)
    term.expect_exact("? Replicas")
    term.send("\r")  # the proposed 3, pre-filled
    term.expect_exact("? Decision")
    term.send("approve\r")
    term.expect_exact("? Reason")
    term.send("\r")
    term.expect_exact("Done: Deployment of api v1.4.2 to production with 3 replicas approved and recorded.")
    assert finish(term) == 0
    assert (tmp_path / "redis.log").exists()  # the embedded server ran in the data dir
    [entry] = [json.loads(line) for line in (tmp_path / "deployments.jsonl").read_text().splitlines()]
    assert {k: entry[k] for k in ("service", "version", "target", "decision")} == {
        "service": "api",
        "version": "v1.4.2",
        "target": "production",
        "decision": "approve",
    }


def test_parley_run_of_an_unknown_agent_lists_the_agents(redis_url: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*parley_command(), "run", "nosuchagent", "x"],
        env=parley_env(redis_url, tmp_path),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    message = done.stdout + done.stderr
    assert re.search(r"unknown agent 'nosuchagent'; known agents: .*deploy.*ticket", message), message


MY_AGENTS = """from workers import agent


@agent("refund", description="Refund an order", usage="<order id>")
def refund(run, text):
    return f"Refunded {text}."
"""
BROKEN_AGENTS = """from workers import agent

raise RuntimeError("REFUNDS_API_KEY is not set")


@agent("refund", usage="<order id>")
def refund(run, text): ...
"""


def in_this_folder(redis_url: str, folder: Path, agents: str) -> tuple[list[str], dict[str, str]]:
    """The `parley` console script and its environment, run from `folder` as `PARLEY_AGENTS=agents parley ...`.

    No PYTHONPATH: the modules are found only because `folder` is the working directory.
    """
    script = Path(sys.executable).with_name("parley")
    assert script.exists(), "the console script is what a newcomer runs; `python -m` would find the folder anyway"
    env = parley_env(redis_url, folder / "data")
    env.pop("PYTHONPATH", None)
    env["PARLEY_AGENTS"] = agents
    return [str(script)], env


def test_parley_run_finds_an_agent_module_in_the_working_directory(redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "my_agents.py").write_text(MY_AGENTS)
    command, env = in_this_folder(redis_url, tmp_path, "my_agents")
    term = pexpect.spawn(
        command[0], [*command[1:], "run", "refund", "A100"], env=env, cwd=str(tmp_path), encoding="utf-8",
        timeout=TIMEOUT,
    )  # fmt: skip
    term.expect_exact("Done: Refunded A100.")
    assert finish(term) == 0


def test_parley_run_of_an_agent_whose_module_fails_says_to_fix_it_and_try_again(redis_url: str, tmp_path: Path) -> None:
    (tmp_path / "my_agents.py").write_text(BROKEN_AGENTS)
    command, env = in_this_folder(redis_url, tmp_path, "my_agents,no_such_agents")
    done = subprocess.run(
        [*command, "run", "refund", "A100"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2, done
    *logged, refusal = done.stderr.splitlines()
    assert refusal == (
        "parley: `refund` did not load: its module `my_agents` failed to load "
        "(RuntimeError: REFUNDS_API_KEY is not set); fix it and try again"
    )
    lines = {line["module"]: line for line in map(json.loads, logged) if line.get("module")}
    assert lines["my_agents"]["agents"] == ["refund"]  # read from its source
    assert "agents" not in lines["no_such_agents"], lines  # nothing to read: no agent named after the module
