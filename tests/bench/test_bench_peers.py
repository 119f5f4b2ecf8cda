"""`python -m bench --peers`: the harness builds the peer's commands and settings and reads its results.

Runs without the `peers` extra: the command-building modules must not import `prefect`,
and `--peers` without it prints how to get it and exits 0. Nothing here starts a process
or talks to a server; the measurement itself is `python -m bench --peers`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the bench is run from the repository root; it is not an installed package

from bench import __main__ as bench_main  # noqa: E402
from bench import m_peers, peers  # noqa: E402
from bench.peers import memory, prefect_server, rows  # noqa: E402
from bench.peers.prefect_server import (  # noqa: E402
    FLOWS_MODULE,
    parse_health,
    parse_resumed,
    pause_argv,
    prefect_env,
    ready_key,
    resumed_key,
    serve_argv,
    server_argv,
)

pytestmark = pytest.mark.unit


def test_the_harness_imports_without_prefect() -> None:
    from bench.peers import prefect_run, rigs

    for module in (prefect_server, memory, peers, m_peers, rigs, rows, prefect_run):
        text = Path(module.__file__ or "").read_text()
        assert not re.search(r"^(import|from) (prefect|bench\.peers\.prefect_(api|flows))\b", text, re.M), module


def test_server_command_is_a_foreground_server_on_loopback() -> None:
    argv = server_argv(4321)
    assert argv[0] == sys.executable
    assert argv[1:] == ["-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", "4321"]


def test_every_prefect_process_gets_its_own_home_and_the_server_url(tmp_path: Path) -> None:
    env = prefect_env(tmp_path, 4321)
    assert env["PREFECT_HOME"] == str(tmp_path)
    assert env["PREFECT_API_URL"] == "http://127.0.0.1:4321/api"
    assert env["PREFECT_SERVER_DATABASE_CONNECTION_URL"] == f"sqlite+aiosqlite:///{tmp_path}/prefect.db"
    assert env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert "PREFECT_RUNNER_POLL_FREQUENCY" not in env
    assert prefect_env(tmp_path, 4321, runner_poll=1)["PREFECT_RUNNER_POLL_FREQUENCY"] == "1"


def test_flow_commands_name_the_mode_and_the_poll() -> None:
    assert pause_argv("ab12", 0.1, 5) == [
        sys.executable,
        "-m",
        FLOWS_MODULE,
        "pause",
        "--tag",
        "ab12",
        "--poll",
        "0.1",
        "--count",
        "5",
    ]
    assert pause_argv("ab12", 10, 1)[7] == "10"
    assert serve_argv() == [sys.executable, "-m", FLOWS_MODULE, "serve"]


def test_the_flow_commands_run_modules_that_exist() -> None:
    assert (ROOT / (FLOWS_MODULE.replace(".", "/") + ".py")).is_file()
    assert (ROOT / "bench" / "peers" / "prefect_flows.py").is_file()


def test_results_are_read_back() -> None:
    assert parse_resumed(b"1764561600.123456") == pytest.approx(1764561600.123456)
    assert parse_resumed("12.5") == 12.5
    assert parse_health(b"true") is True
    assert parse_health(b"false") is False
    assert parse_health(b"<html>") is False
    assert ready_key("t1") != resumed_key("t1")
    assert resumed_key("t1").endswith(":t1")


def test_smaps_rollup_and_stat_are_parsed() -> None:
    rollup = (
        "5629e9dff000-7fff56e7e000 ---p 00000000 00:00 0                          [rollup]\n"
        "Rss:               81234 kB\n"
        "Pss:               40321 kB\n"
        "Pss_Anon:          30000 kB\n"
    )
    fields = memory.parse_rollup(rollup)
    assert fields["Rss"] == 81234
    assert fields["Pss"] == 40321
    assert "5629e9dff000-7fff56e7e000 ---p 00000000 00" not in fields
    assert memory.parse_pgrp("123 (python -m x) S 1 777 777 0 -1") == 777
    total = memory.Memory(1024, 2048, 1) + memory.Memory(1024, 0, 1)
    assert (total.pss_mb, total.rss_mb, total.processes) == (2.0, 2.0, 2)


def test_memory_rows_compare_growth_not_fixed_cost() -> None:
    mem = {
        "server at start": memory.Memory(0, 250 * 1024, 1),
        "server before 8": memory.Memory(0, 300 * 1024, 1),
        "8 paused flows": memory.Memory(8 * 80 * 1024, 8 * 120 * 1024, 8),
        "server, 8 paused": memory.Memory(0, 302 * 1024, 1),
        "server, 8 suspended": memory.Memory(0, 301 * 1024, 1),
    }
    fixed = {"serve": 60.0, "worker": 50.0, "redis": 10.0, "total": 120.0}
    table = rows.memory_rows({8: 8 * 4500.0}, mem, fixed)
    by_case = {r.case: r for r in table}
    paused = by_case["8 runs, pause"]
    assert paused.baseline == pytest.approx(640 + 2)
    assert paused.parley == pytest.approx(36000 / (1024 * 1024))
    assert by_case["8 runs, suspend + serve"].baseline == pytest.approx(1.0)
    assert by_case["fixed: servers, workers"].baseline == pytest.approx(250)
    assert by_case["fixed: servers, workers"].parley == 120.0


def test_memory_rows_at_as_many_paused_flows_as_fit() -> None:
    """Only 57 of 100 flows started: Prefect's row is at 57 beside Parley's at 57; 100 is Parley's alone."""
    mem = {
        "server at start": memory.Memory(0, 250 * 1024, 1),
        "server before 57": memory.Memory(0, 260 * 1024, 1),
        "57 paused flows": memory.Memory(57 * 70 * 1024, 57 * 110 * 1024, 57),
        "server, 57 paused": memory.Memory(0, 270 * 1024, 1),
    }
    fixed = {"serve": 60.0, "worker": 50.0, "redis": 10.0, "total": 120.0}
    table = rows.memory_rows({8: 8 * 4500.0, 57: 57 * 4400.0, 100: 100 * 4300.0}, mem, fixed)
    by_case = {r.case: r for r in table}
    assert by_case["57 runs, pause"].baseline == pytest.approx(57 * 70 + 10)
    assert by_case["57 runs, pause"].parley == pytest.approx(57 * 4400.0 / (1024 * 1024))
    assert "57 processes" in by_case["57 runs, pause"].note
    assert by_case["100 runs"].baseline is None
    assert "Prefect not run at this N" in by_case["100 runs"].note
    assert "8 runs, pause" not in by_case and "8 runs" in by_case


def test_the_command_line_asks_for_100_paused_flows_by_default() -> None:
    assert bench_main._args(["--peers"]).peers_n == 100
    assert bench_main._args(["--peers", "--peers-n", "20"]).peers_n == 20


def test_peers_without_prefect_says_how_to_get_it_and_skips(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(m_peers, "prefect_version", lambda: None)
    assert bench_main.main(["--peers"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [peers.INSTALL_HINT]
    assert "pip install -e '.[peers]'" in out[0]


def test_ci_does_not_install_the_extra() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -e '.[test]'" in ci
    assert "peers" not in ci
