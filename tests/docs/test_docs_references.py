"""Every test a document names exists: docs/reliability.md's attacker table and the rest stay true."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from source_trees import parsed

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), *(ROOT / "bench").glob("*.md")])
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?")


def references() -> list[tuple[str, str, str | None]]:
    found = []
    for doc in DOCS:
        for path, name in REFERENCE.findall(doc.read_text()):
            found.append((doc.name, path, name or None))
    return found


def defined(path: Path) -> set[str]:
    tree = parsed(path)
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}


def test_every_named_test_exists() -> None:
    refs = references()
    assert any(doc == "reliability.md" for doc, _, _ in refs), "no test references found in docs/reliability.md"
    missing = []
    for doc, path, name in refs:
        file = ROOT / path
        if not file.exists():
            missing.append(f"{doc}: {path}")
        elif name is not None and name not in defined(file):
            missing.append(f"{doc}: {path}::{name}")
    assert missing == []


def test_the_checker_finds_a_missing_test(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text("def test_here() -> None:\n    pass\n")
    assert defined(module) == {"test_here"}
    assert REFERENCE.findall("`tests/test_x.py::test_gone`") == [("tests/test_x.py", "test_gone")]


def test_the_readme_stays_short() -> None:
    """The README is a newcomer's first page: at most 250 lines, the detail in docs/."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail to docs/"
