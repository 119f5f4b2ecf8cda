"""Shipped agents that need an optional extra: left out where it is not installed, never hiding another error."""

from __future__ import annotations

import importlib.util
import sys
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


def test_an_agents_module_in_the_working_directory_loads_and_the_directory_is_searched_only_then(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "parley_wd_agents.py").write_text(
        "import parley_wd_helpers  # a sibling, imported as the module loads\n"
        "from workers import agent\n\n\n"
        '@agent("parley-wd-probe", listed=False)\n'
        "def probe(run, text):\n"
        "    return parley_wd_helpers.NAME\n"
    )
    (tmp_path / "parley_wd_helpers.py").write_text('NAME = "helpers"\n')
    (tmp_path / "parley_wd_stray.py").write_text("raise AssertionError('a stray file was imported')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    before = list(sys.path)
    try:
        assert registry.load_agents(["parley_wd_agents"]).get("parley-wd-probe").name == "parley-wd-probe"
        assert sys.modules["parley_wd_helpers"].NAME == "helpers"
        assert sys.path == before
        assert importlib.util.find_spec("parley_wd_stray") is None  # what a later optional import would find
    finally:
        for name in ("parley_wd_agents", "parley_wd_helpers"):
            sys.modules.pop(name, None)
