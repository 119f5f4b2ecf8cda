"""Stopping `parley run` and carrying on: real processes in a pty, against the test Redis.

Ctrl-C must leave the run in the state the command says it is in, one that `parley runs
show` shows too and from which the run can go on without waiting for anything to lapse:
paused on its question (resumed by `parley run --resume`, or by a worker once answered
elsewhere), or queued again when stopped inside a step. Without a terminal, `parley run`
starts nothing. The admin commands' logs, in a terminal, are for reading.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pexpect
import pytest
from agents_for_tests import count, counter_path
from redis import Redis
from rq.job import Job
from runtime_helpers import make_runtime
from terminal_support import (
    CTRL_C,
    DOWN,
    FINISH,
    TIMEOUT,
    finish,
    parley_command,
    parley_env,
    spawn_run,
    started_run,
    stored,
)

from parley.identity import os_user
from workers.agents.ticket import details_request
from workers.agents.tracker import read_tickets
from workers.interaction import Answer
from workers.runtime.acceptance import accept
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.system

TITLE = "Create ticket for login issue"


def parley(redis_url: str, data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`parley ARGS...` without a terminal, its output captured."""
    return subprocess.run(
        [*parley_command(), *args],
        env=parley_env(redis_url, data_dir, test_agents=True),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def shown_status(redis_url: str, data_dir: Path, run_id: str) -> str:
    shown = parley(redis_url, data_dir, "runs", "show", run_id)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.splitlines()[0].split("  status ")[1].split()[0]


def stop_at_the_question(redis_url: str, data_dir: Path) -> str:
    term = spawn_run(redis_url, data_dir, "ticket", TITLE)
    run_id = started_run(term)
    term.expect_exact("? Describe the bug")
    term.send(CTRL_C)
    term.expect_exact(f"Run {run_id} is paused on its question; answer it here with: parley run --resume {run_id}")
    assert finish(term) == 130
    return run_id


def test_ctrl_c_at_a_question_pauses_the_run_and_resume_answers_it_here(
    redis_url: str, r: Redis, tmp_path: Path
) -> None:
    run_id = stop_at_the_question(redis_url, tmp_path)
    run = stored(redis_url, run_id)
    assert (run.status, run.lease_until) == (RunStatus.PAUSED, 0)
    assert shown_status(redis_url, tmp_path, run_id) == "paused"
    question = make_runtime(r, tmp_path).store.interrupt(run.interrupt or "")
    assert question is not None and question.state is InterruptState.OPEN and question.assignees == [os_user()]

    term = spawn_run(redis_url, tmp_path, "--resume", run_id)
    term.expect_exact(f"Run {run_id}: ticket {TITLE} (resumed)")
    term.expect_exact("? Describe the bug")
    term.send("Nothing happens on submit." + FINISH)
    term.expect_exact("? Who is affected?")
    term.send("\r")
    term.expect_exact("? Severity")
    term.send("9\r")  # refused in place, then fixed
    term.expect_exact("There is no option 9")
    term.send("\x15high\r")
    term.expect_exact("? Components")
    term.send("api\r")
    term.expect_exact("? Due date")
    term.send("\r")
    term.expect_exact(f"Done: Created PAR-1: {TITLE}. Severity High, affects All users, components API.")
    assert finish(term) == 0

    assert shown_status(redis_url, tmp_path, run_id) == "succeeded"
    history = make_runtime(r, tmp_path).store.history(run_id)
    assert [(h.event, h.by) for h in history if h.event == "answered"] == [("answered", os_user())]
    [ticket] = read_tickets(tmp_path / "tickets.jsonl")
    assert (ticket["run_id"], ticket["severity"], ticket["components"]) == (run_id, "sev2", ["API"])


def test_ctrl_c_mid_question_keeps_the_answered_items_and_resume_prefills_them(
    redis_url: str, r: Redis, tmp_path: Path
) -> None:
    term = spawn_run(redis_url, tmp_path, "ticket", *TITLE.split())  # unquoted: the rest of the line is the text
    run_id = started_run(term)
    assert stored(redis_url, run_id).text == TITLE
    term.expect_exact("? Describe the bug")
    term.send("Nothing happens on submit." + FINISH)
    term.expect_exact("? Who is affected?")
    term.send(DOWN + "\r")
    term.expect_exact("Who is affected? Some users")
    term.expect_exact("? Severity")
    term.send(CTRL_C)
    term.expect_exact(f"Run {run_id} is paused on its question")
    assert finish(term) == 130

    term = spawn_run(redis_url, tmp_path, "--resume", run_id)
    term.expect_exact("? Describe the bug")
    term.expect_exact("Nothing happens on submit.")  # pre-filled: confirmed as it stands
    term.send(FINISH)
    term.expect_exact("? Who is affected?")
    term.send("\r")  # the highlight starts on the earlier choice
    term.expect_exact("Who is affected? Some users")
    term.expect_exact("? Severity")
    term.send("high\r")
    term.expect_exact("? Components")
    term.send("api\r")
    term.expect_exact("? Due date")
    term.send("\r")
    term.expect_exact(f"Done: Created PAR-1: {TITLE}. Severity High, affects Some users, components API.")
    assert finish(term) == 0
    [ticket] = read_tickets(tmp_path / "tickets.jsonl")
    assert (ticket["description"], ticket["affected"]) == ("Nothing happens on submit.", "Some users")
    assert not r.keys("parley:interrupt:*:draft")  # answered: no draft left


def test_a_run_stopped_at_its_question_is_carried_on_by_a_worker_once_answered_elsewhere(
    redis_url: str, r: Redis, tmp_path: Path
) -> None:
    run_id = stop_at_the_question(redis_url, tmp_path)
    rt = make_runtime(r, tmp_path)
    question = rt.store.interrupt(stored(redis_url, run_id).interrupt or "")
    assert question is not None
    items = {i.id: i for i in details_request(TITLE).items}
    values = {"description": "Blank page", "affected": "Some users", "severity": "sev3", "components": ["Login"]}
    accept(rt, question, os_user(), [Answer.for_item(items[k], v) for k, v in values.items()])

    worked = parley(redis_url, tmp_path, "worker", "--burst")
    assert worked.returncode == 0, worked.stderr
    assert stored(redis_url, run_id).status is RunStatus.SUCCEEDED
    [ticket] = read_tickets(tmp_path / "tickets.jsonl")
    assert (ticket["run_id"], ticket["affected"], ticket["severity"]) == (run_id, "Some users", "sev3")


def test_ctrl_c_inside_a_step_hands_the_run_back_and_resume_carries_it_on(
    redis_url: str, r: Redis, tmp_path: Path
) -> None:
    term = spawn_run(redis_url, tmp_path, "t-crash", json.dumps({"sleep": 60}), test_agents=True)
    run_id = started_run(term, "t-crash")
    deadline = time.monotonic() + TIMEOUT
    while not counter_path(tmp_path, run_id, "reached").exists():  # its step is recorded; now it sleeps
        assert time.monotonic() < deadline, term.before
        time.sleep(0.05)
    epoch = stored(redis_url, run_id).epoch
    term.send(CTRL_C)
    term.expect_exact(f"Run {run_id} is queued: a parley worker will carry it on, or carry it on here with:")
    assert finish(term) == 130

    run = stored(redis_url, run_id)
    assert (run.status, run.lease_until, run.epoch) == (RunStatus.QUEUED, 0, epoch + 1)
    assert run.job and Job.exists(run.job, connection=r)  # a worker would take it now, without a sweep
    assert shown_status(redis_url, tmp_path, run_id) == "queued"

    term = spawn_run(redis_url, tmp_path, "--resume", run_id, test_agents=True)
    term.expect_exact("Done: done 1")
    assert finish(term) == 0
    assert stored(redis_url, run_id).status is RunStatus.SUCCEEDED
    assert count(tmp_path, run_id, "step") == 1  # the recorded step was not repeated
    assert not Job.exists(run.job, connection=r)  # withdrawn: this terminal ran it


def test_parley_run_without_a_terminal_refuses_before_it_starts_a_run(redis_url: str, r: Redis, tmp_path: Path) -> None:
    done = parley(redis_url, tmp_path, "run", "ticket", TITLE)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.strip() == "parley: parley run asks its questions in a terminal, and standard input is not one"
    assert make_runtime(r, tmp_path).store.list_ids(None) == []


def test_an_admin_command_in_a_terminal_writes_readable_logs_and_its_answer(
    redis_url: str, r: Redis, tmp_path: Path
) -> None:
    run_id = make_runtime(r, tmp_path).store.create("ticket", "x", "U1", {}).id
    command = parley_command()
    env = parley_env(redis_url, tmp_path)
    term = pexpect.spawn(command[0], [*command[1:], "runs", "cancel", run_id], env=env, encoding="utf-8")
    term.expect(pexpect.EOF, timeout=TIMEOUT)
    term.close()
    lines = [line for line in term.before.splitlines() if line.strip()]
    assert term.exitstatus == 0 and lines[-1] == f"run {run_id} is cancelled", lines
    assert not any(line.lstrip().startswith("{") for line in lines), lines  # no JSON for a person to read
    assert any(f"INFO cancelled  run_id={run_id}" in line for line in lines), lines
