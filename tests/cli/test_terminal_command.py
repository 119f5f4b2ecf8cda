"""`parley run` end to end in a real pty, against the test Redis (or the embedded one).

The real `parley run ticket ...` command is answered the way a person would: arrow keys,
Space, typed replies, Esc then Enter to finish a multiline answer; what it filed and what
it left in Redis are read back afterwards.
"""

from __future__ import annotations

import json
import re
import subprocess
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
