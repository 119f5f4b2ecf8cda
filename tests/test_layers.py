"""The layering rules, checked by parsing imports: the port imports no host, workers never import bot."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STDLIB_OK = {
    "__future__",
    "typing",
    "re",
    "enum",
    "datetime",
    "json",
    "dataclasses",
    "collections",
    "unicodedata",
    "functools",
    "itertools",
    "math",
    "string",
    "abc",
}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", files("workers"), ids=lambda p: str(p.relative_to(ROOT)))
def test_workers_never_import_bot_or_parley(path: Path) -> None:
    bad = {m for m in imports(path) if m.split(".")[0] in ("bot", "parley")}
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("path", files("workers/interaction"), ids=lambda p: str(p.relative_to(ROOT)))
def test_port_imports_only_stdlib_and_pydantic(path: Path) -> None:
    for module in imports(path):
        top = module.split(".")[0]
        if module.startswith("workers.interaction") or top == "pydantic" or top in STDLIB_OK:
            continue
        pytest.fail(f"{path.relative_to(ROOT)} imports {module}")


def test_rule_checker_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("from bot.slack import blocks\nimport redis\n")
    assert {"bot.slack", "redis"} <= imports(bad)
