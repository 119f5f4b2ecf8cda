"""Each concept has its own name: Parley defines no `Scope` (a workspace is a `Tenant`, a token's
permission a `TokenScope`; `Scope` is left to starlette's ASGI scope)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from source_trees import walked

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def defined(paths: list[Path], name: str) -> list[str]:
    return [
        f"{p.name}:{node.lineno}"
        for p in paths
        for node in walked(p)
        if isinstance(node, ast.ClassDef) and node.name == name
    ]


def test_parley_defines_no_class_named_scope() -> None:
    paths = [p for d in ("workers", "bot", "parley") for p in sorted((ROOT / d).rglob("*.py"))]
    assert defined(paths, "Scope") == []
    assert len(defined(paths, "Tenant")) == 1 and len(defined(paths, "TokenScope")) == 1
