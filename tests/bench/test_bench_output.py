"""`python -m bench`'s output and its missing programs, without running a measurement.

`--out` is the only directory a run writes (the tracked `bench/results/` stays as it is), and a
measurement whose programs are not installed is skipped with one line saying how to install
them, while the others still report.
"""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the bench is run from the repository root; it is not an installed package

from bench import __main__ as bench_main  # noqa: E402
from bench import m_replicas, m_scaleout, measurement, report  # noqa: E402
from bench.measurement import Config, MissingTool, Result, Row  # noqa: E402

pytestmark = pytest.mark.unit

RESULTS = ROOT / "bench" / "results"
META = {
    "mode": "quick",
    "when": "2026-12-04 18:00 UTC",
    "command": "python -m bench --quick",
    "cpus": 2,
    "python": "3.11",
    "redis": "7.0",
    "rq": "2.0",
    "bolt": "1.21",
    "commit": "abc1234",
    "seconds": 95.0,
}


def tree(directory: Path) -> dict[str, str]:
    """Every file under `directory` by relative path, with its content's digest."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_out_is_the_only_directory_written(tmp_path: Path) -> None:
    rows = [Row("1 ack path", "Submit", "p99 ms", 12.0, 10.0, 1.2, "<= 1.5x", True)]
    before = tree(RESULTS)
    out = tmp_path / "out"
    assert bench_main._args(["--quick", "--out", str(out)]).out == out
    written = report.write_results(out, rows, {"1": {"p99": 12.0}}, META, copy_as="quick")
    kinds = ("json", "md", "png") if report.can_plot() else ("json", "md")  # the plot needs the dev extra
    assert sorted(p.name for p in written) == sorted(f"{stem}.{ext}" for stem in ("latest", "quick") for ext in kinds)
    assert all(p.parent == out for p in written)
    assert sorted(tree(out)) == sorted(p.name for p in written)
    assert tree(RESULTS) == before

    only = tmp_path / "only"
    assert [p.name for p in report.write_results(only, rows, {}, META, copy_as=None)] == [
        f"latest.{kind}" for kind in kinds
    ]
    assert sorted(tree(only)) == [f"latest.{kind}" for kind in kinds]
    assert tree(RESULTS) == before


def fake_measurement(name: str, tools: dict[str, str], outcome: BaseException | None) -> str:
    """A measurement module named `name` needing `tools`; its `measure` raises `outcome` or reports one row."""

    def measure(stack: object, cfg: Config) -> Result:
        if outcome is not None:
            raise outcome
        return Result(rows=[Row("12 fake", "ran", "x", 1.0)])

    module = types.ModuleType(name)
    module.TOOLS = tools  # type: ignore[attr-defined]
    module.measure = measure  # type: ignore[attr-defined]
    sys.modules[name] = module
    return name


def test_a_missing_program_skips_its_measurement_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = Config(quick=True, rounds=1)
    missing = {"parley-no-such-proxy": "apt-get install -y parley-no-such-proxy"}
    never = fake_measurement("bench.m_fakeproxy", missing, AssertionError("measured without its program"))
    rows, detail = bench_main.run_one(11, never, stack=None, cfg=cfg)  # type: ignore[arg-type]
    line = "parley-no-such-proxy not found: apt-get install -y parley-no-such-proxy"
    assert [(r.measure, r.case, r.note) for r in rows] == [("11 fakeproxy", "skipped", line)]
    assert detail == {"skipped": line}
    assert capsys.readouterr().err == f"measurement 11 skipped: {line}\n"

    # Found missing only once it runs: skipped the same way, and the next measurement still reports.
    late = fake_measurement("bench.m_fakelate", {}, MissingTool("haproxy not found: apt-get install -y haproxy"))
    rows, _ = bench_main.run_one(11, late, stack=None, cfg=cfg)  # type: ignore[arg-type]
    assert [r.case for r in rows] == ["skipped"]
    assert capsys.readouterr().err == "measurement 11 skipped: haproxy not found: apt-get install -y haproxy\n"
    ok = fake_measurement("bench.m_fakeok", {"sh": "apt-get install -y dash"}, None)
    rows, _ = bench_main.run_one(12, ok, stack=None, cfg=cfg)  # type: ignore[arg-type]
    assert [r.case for r in rows] == ["ran"]
    assert capsys.readouterr().err == ""


def test_scale_out_and_replicas_name_the_programs_they_need(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measurement, "SYSTEM_PATH", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed
    assert measurement.missing_tools(m_scaleout.TOOLS) == [
        "redis-server not found: apt-get install -y redis-server",
        "redis-benchmark not found: apt-get install -y redis-tools",
        "haproxy not found: apt-get install -y haproxy",
    ]
    assert measurement.missing_tools(m_replicas.TOOLS) == ["redis-server not found: apt-get install -y redis-server"]
    with pytest.raises(MissingTool, match="apt-get install -y haproxy"):
        measurement.find_tool("haproxy", m_scaleout.TOOLS["haproxy"])
