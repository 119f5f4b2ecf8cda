"""The `parley` command line, in-process: what it prints for mistakes, who the admin commands act as.

Every mistake is one line naming what to do instead (no traceback, no internal name),
and an admin command prints its answer alone on stdout, recording the OS user in the
run's history.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import slack_agents  # noqa: F401  (registers s-form)
from redis import Redis
from runtime_helpers import make_runtime, parked

from parley.cli import main
from parley.settings import Settings
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


def test_parley_run_with_neither_an_agent_nor_resume_asks_for_one_and_does_not_say_not_both(parley: Parley) -> None:
    neither = one_line_refusal(*parley("run"))
    assert neither == (
        "parley run: name an agent to start a run (parley run AGENT TEXT), or --resume RUN_ID to carry one on"
    )
    both = one_line_refusal(*parley("run", "ticket", "--resume", "r1"))
    assert both == "parley run: name an agent to start a run, or --resume RUN_ID to carry one on, not both"


def parley_process(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The `parley` console script, as a newcomer types it: its own process, with `env` added."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PARLEY_", "SLACK_", "REDIS_"))}
    clean.update(env)
    return subprocess.run(
        [str(Path(sys.executable).with_name("parley")), *argv],
        cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_bad_log_level_is_one_line_naming_the_variable_and_the_levels(tmp_path: Path) -> None:
    done = parley_process(tmp_path, "runs", "list", PARLEY_LOG_LEVEL="verbose", PARLEY_DATA_DIR=str(tmp_path))
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == (
        "parley: PARLEY_LOG_LEVEL: must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL (in any case), not 'verbose'\n"
    ), done.stderr


def test_the_other_names_logging_takes_for_a_level_are_read_as_that_level() -> None:
    assert [Settings(parley_log_level=name).parley_log_level for name in ("warn", " Fatal", "debug")] == [
        "WARNING",
        "CRITICAL",
        "DEBUG",
    ]


def test_a_data_dir_that_is_a_file_is_one_line_naming_the_variable(tmp_path: Path) -> None:
    occupied = tmp_path / "parley"
    occupied.write_text("not a folder")
    done = parley_process(tmp_path, "runs", "list", PARLEY_DATA_DIR=str(occupied))  # the embedded Redis's folder
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == f"parley: PARLEY_DATA_DIR: cannot use {occupied.resolve()}: Not a directory\n", done.stderr


def test_the_configuration_doc_lists_each_variable_once_and_no_doc_links_to_itself() -> None:
    root = Path(__file__).resolve().parents[2]
    rows = re.findall(r"^\| `([A-Z_]+)`", (root / "docs" / "configuration.md").read_text(), re.MULTILINE)
    assert sorted({name for name in rows if rows.count(name) > 1}) == []
    itself = []
    for doc in [*root.glob("*.md"), *(root / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s:]+)(?:#[^)]*)?\)", doc.read_text()):
            if (doc.parent / target).resolve() == doc.resolve():
                itself.append(f"{doc.name} -> {target}")
    assert itself == []


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


# ---- issue 38: output a shell or a person can use ---------------------------------------
def test_parley_run_takes_the_rest_of_the_line_as_the_text(parley: Parley) -> None:
    """Unquoted words are the text, as after `/parley ticket`; here the refusal is the terminal's, not usage."""
    refusal = one_line_refusal(*parley("run", "ticket", "Create", "ticket", "for", "login", "issue"))
    assert refusal == "parley: parley run asks its questions in a terminal, and standard input is not one"


def test_parley_run_without_the_text_an_agent_needs_says_what_it_needs(parley: Parley) -> None:
    """As `/parley ticket` does in Slack: the text it needs, then what the agent does."""
    code, out, err = parley("run", "ticket")
    assert (code, out) == (2, "") and "Traceback" not in err, err
    assert err.splitlines() == [
        "parley: ticket needs its text: parley run ticket <what is wrong>",
        "File a ticket in the local tracker: `/parley ticket Login fails on Safari`",
    ]


def test_tokens_create_prints_only_what_eval_can_use_and_json_on_request(parley: Parley, r: Redis) -> None:
    code, out, err = parley("tokens", "create", "ci-bot")
    assert code == 0
    token, secret = out.splitlines()
    assert re.fullmatch(r"export PARLEY_TOKEN=pk_[A-Za-z0-9_-]+", token), out
    assert re.fullmatch(r"export PARLEY_WEBHOOK_SECRET=whsec_[A-Za-z0-9+/=_-]+", secret), out
    assert "shown once" in err and "ci-bot" in err  # the prose is for the person, on standard error

    code, out, err = parley("tokens", "create", "auditor", "--scope", "admin", "--json")
    assert (code, err) == (0, "")
    made = json.loads(out)
    assert (made["name"], made["scopes"], made["team"]) == ("auditor", ["admin"], None)
    assert made["token"].startswith("pk_") and made["webhook_secret"].startswith("whsec_")
    assert out.count("\n") == 1  # one object, on one line


def test_eval_of_tokens_create_exports_both_to_the_programs_the_shell_starts(
    redis_url: str, r: Redis, tmp_path: Path
) -> None:
    """The documented `eval "$(parley tokens create NAME)"`, then a program reading the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PARLEY_", "SLACK_"))}
    env.update(REDIS_URL=redis_url, PARLEY_DATA_DIR=str(tmp_path), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    child = 'bash -c \'printf "%s %s" "$PARLEY_TOKEN" "$PARLEY_WEBHOOK_SECRET"\''
    script = f'eval "$(parley tokens create refunds)" && {child}'
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    token, secret = done.stdout.split(" ")
    assert token.startswith("pk_") and secret.startswith("whsec_"), done.stdout

    again = subprocess.run(
        ["parley", "tokens", "create", "refunds"], env=env, capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 2 and again.stdout == "", again
    assert "`parley tokens revoke refunds` first, or pick another name" in again.stderr, again.stderr


def test_runs_list_refuses_page_zero(parley: Parley) -> None:
    assert one_line_refusal(*parley("runs", "list", "--page", "0")) == "parley: --page 0: pages are numbered from 1"
    assert "pages are numbered from 1" in one_line_refusal(*parley("runs", "list", "--page", "-2"))


def test_runs_show_indents_the_question_and_writes_history_as_key_value(
    parley: Parley, r: Redis, tmp_path: Path
) -> None:
    rt = make_runtime(r, tmp_path)
    run_id, _ = parked(rt, "s-form", {"reason": "Deploy v1.4.2?\nThe canary is green."})
    code, out, _ = parley("runs", "show", run_id)
    assert code == 0
    lines = out.splitlines()
    first = lines.index("  Deploy v1.4.2?")
    assert lines[first + 1] == "  The canary is green."
    assert "{'" not in out and "'}" not in out, out  # no Python reprs
    assert any(" started " in line and "agent=s-form text={" in line for line in lines), out
