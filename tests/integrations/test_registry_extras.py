"""Shipped agents that need an optional extra: left out where it is not installed, never hiding another error."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from workers import registry
from workers.exceptions import ConfigError

pytestmark = pytest.mark.unit


def shipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, source: str) -> None:
    """Make module `name` (with `source`) one of the shipped agents, importable from `tmp_path`."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "BUILTIN_MODULES", (*registry.BUILTIN_MODULES, name))
    monkeypatch.setattr(registry, "OPTIONAL_FRAMEWORKS", frozenset({"parley_absent_framework"}))


def test_a_shipped_agent_whose_framework_is_not_installed_is_left_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shipped(monkeypatch, tmp_path, "parley_extra_agent", "import parley_absent_framework\n")
    assert "ticket" in registry.load_agents().names()


def test_a_shipped_agent_missing_anything_else_stops_the_load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shipped(monkeypatch, tmp_path, "parley_broken_agent", "import parley_absent_dependency\n")
    with pytest.raises(ConfigError, match="parley_absent_dependency"):
        registry.load_agents()


@pytest.fixture
def working_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """An empty working directory off `sys.path`, as a console script starts in, holding a stray file."""
    here = tmp_path / "here"
    here.mkdir()
    (here / "parley_wd_stray.py").write_text("raise AssertionError('a stray file was imported')\n")
    monkeypatch.chdir(here)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(here))])
    yield here
    for name in ("parley_wd_agents", "parley_wd_helpers", "parley_installed_agents"):
        sys.modules.pop(name, None)


def test_an_agent_in_the_working_directory_imports_a_module_beside_it_when_it_runs(working_directory: Path) -> None:
    (working_directory / "parley_wd_agents.py").write_text(
        "from workers import agent\n\n\n"
        '@agent("parley-wd-probe", listed=False)\n'
        "def probe(run, text):\n"
        "    import parley_wd_helpers  # a sibling, imported only as the agent runs\n\n"
        "    return parley_wd_helpers.NAME\n"
    )
    (working_directory / "parley_wd_helpers.py").write_text('NAME = "helpers"\n')
    before = list(sys.path)
    spec = registry.load_agents(["parley_wd_agents"]).get("parley-wd-probe")
    assert spec.fn(None, "") == "helpers"  # type: ignore[arg-type]
    assert sys.path == [*before, str(working_directory)]  # last: it hides no installed package


@pytest.mark.parametrize("agents", [["parley_installed_agents"], []], ids=["installed", "none"])
def test_agents_from_elsewhere_leave_a_stray_file_in_the_working_directory_unimported(
    working_directory: Path, tmp_path: Path, agents: list[str]
) -> None:
    installed = tmp_path / "site-packages"
    installed.mkdir()
    (installed / "parley_installed_agents.py").write_text("from workers import agent\n")
    sys.path.append(str(installed))
    before = list(sys.path)
    registry.load_agents(agents)
    assert sys.path == before
    assert importlib.util.find_spec("parley_wd_stray") is None  # what a later optional import would find
