"""Shipped agents that need an optional extra: left out where it is not installed, never hiding another error."""

from __future__ import annotations

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
