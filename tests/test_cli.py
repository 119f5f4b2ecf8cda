"""The `parley` command line, in-process: what it prints for mistakes, who the admin commands act as.

Every mistake is one line naming what to do instead (no traceback, no internal name),
and an admin command prints its answer alone on stdout, recording the OS user in the
run's history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis import Redis

from parley.cli import main
from workers.runtime.wiring import Runtime, RuntimeSettings
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

Parley = Callable[..., tuple[int, str, str]]


@pytest.fixture
def parley(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Parley]:
    """`parley ARGS...` in this process as OS user jane: (exit status, stdout, stderr)."""
    for name in ("PARLEY_AGENTS", "PARLEY_ADMINS", "PARLEY_LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("PARLEY_DATA_DIR", str(tmp_path))
    monkeypatch.setattr("getpass.getuser", lambda: "jane")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    root.handlers[:], root.level = handlers, level


def runtime(r: Redis, tmp_path: Path) -> Runtime:
    return Runtime.build(r, settings=RuntimeSettings(data_dir=tmp_path))


def one_line_refusal(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "", (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


# ---- item 8: the CLI acts as the OS user -----------------------------------------------
def test_cancel_and_retry_record_the_os_user_and_print_only_their_answer(
    parley: Parley, r: Redis, tmp_path: Path
) -> None:
    rt = runtime(r, tmp_path)
    queued = rt.store.create("ticket", "x", "U1", {}).id
    failed = rt.store.create("ticket", "y", "U1", {}).id
    assert rt.store.transition(failed, [RunStatus.QUEUED], RunStatus.FAILED, error="broken")[0]

    assert parley("runs", "cancel", queued)[:2] == (0, f"run {queued} is cancelled\n")
    assert parley("runs", "retry", failed)[:2] == (0, f"run {failed} is queued\n")

    assert [(h.event, h.by) for h in rt.store.history(queued)][-1] == ("cancelled", "cli:jane")
    assert [(h.event, h.by) for h in rt.store.history(failed)][-1] == ("retried", "cli:jane")


# ---- item 9: rough edges -------------------------------------------------------------------
def test_parley_runs_without_a_command_names_the_commands(parley: Parley) -> None:
    line = one_line_refusal(*parley("runs"))
    assert "list, show, cancel, retry, purge" in line
    assert "runs_command" not in line


@pytest.mark.parametrize(
    "argv",
    [
        ["dev", "--port", "99999"],
        ["dev", "--port", "65535"],  # the Slack app would need 65536
        ["dev", "--port", "0"],
        ["dev", "--port", "http"],
        ["serve", "--port", "70000"],
    ],
)
def test_a_port_out_of_range_is_refused_in_one_line(parley: Parley, argv: list[str]) -> None:
    code, out, err = parley(*argv)
    assert (code, out) == (2, "")
    assert "Traceback" not in err and "OverflowError" not in err
    [problem] = [line for line in err.splitlines() if "error:" in line]
    assert "is not a port: give a number from 1 to" in problem


def test_dev_help_names_the_default_port_and_the_bot_port(parley: Parley) -> None:
    code, out, _ = parley("dev", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "default: 3000" in text and "PORT+1" in text


def test_parley_run_needs_an_agent_or_resume_but_not_both(parley: Parley) -> None:
    assert "--resume RUN_ID" in one_line_refusal(*parley("run"))
    assert "not both" in one_line_refusal(*parley("run", "ticket", "--resume", "r1"))


def test_resume_refuses_runs_that_are_not_this_users_paused_or_queued_ones(
    parley: Parley, r: Redis, tmp_path: Path
) -> None:
    rt = runtime(r, tmp_path)
    someone_elses = rt.store.create("ticket", "x", "bob", {"host": "terminal"}).id
    from_slack = rt.store.create("ticket", "x", "jane", {"host": "slack", "team": "T1", "channel": "C1"}).id
    finished = rt.store.create("ticket", "x", "jane", {"host": "terminal"}).id
    assert rt.store.transition(finished, [RunStatus.QUEUED], RunStatus.SUCCEEDED, result="done")[0]
    before = {run_id: rt.store.get(run_id) for run_id in (someone_elses, from_slack, finished)}

    refusals = {
        someone_elses: "was started by bob; only they can resume it",
        from_slack: "was not started with parley run",
        finished: "is succeeded; only a paused or queued run can be resumed",
        "r-no-such-run": "no run 'r-no-such-run'",
    }
    for run_id, why in refusals.items():
        assert why in one_line_refusal(*parley("run", "--resume", run_id))
    assert {run_id: rt.store.get(run_id) for run_id in before} == before
