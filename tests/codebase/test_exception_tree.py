"""One exception root: every error class the server side defines derives from `workers.exceptions.ParleyError`,
and no two public exception classes share a name."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
from source_trees import walked

import parley.client
import workers.exceptions
import workers.interaction

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = {"Exception", "BaseException", "ValueError", "TypeError", "KeyError", "RuntimeError", "LookupError"}


def classes(paths: list[Path]) -> list[tuple[str, list[str], str]]:
    """(class name, its bases' names, where) for every class defined in `paths`."""
    found = []
    for path in paths:
        for node in walked(path):
            if isinstance(node, ast.ClassDef):
                bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
                found.append((node.name, bases, f"{path}:{node.lineno}"))
    return found


def descendants(found: list[tuple[str, list[str], str]], roots: set[str]) -> set[str]:
    names = set(roots)
    while True:
        more = {name for name, bases, _ in found if set(bases) & names} - names
        if not more:
            return names
        names |= more


def sources(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in sorted((ROOT / d).rglob("*.py"))]


def strays(paths: list[Path]) -> list[str]:
    """Exception classes in `paths` that do not derive from ParleyError (signals excepted)."""
    found = classes(paths)
    exceptions = descendants(found, BUILTIN)
    rooted = descendants(found, {"ParleyError", "RunSignal"})
    return sorted(where for name, _, where in found if name in exceptions - rooted and name != "ParleyError")


def test_every_server_side_error_derives_from_parley_error() -> None:
    assert strays(sources("workers", "bot")) == []
    assert strays([p for p in sources("parley") if p.name not in ("client.py", "_client_common.py")]) == []


def test_the_port_root_is_the_one_root() -> None:
    assert workers.exceptions.ParleyError is workers.interaction.InteractionError.__mro__[1]
    assert issubclass(workers.interaction.QuestionExpired, workers.exceptions.ParleyError)
    assert issubclass(workers.interaction.AnswerError, workers.exceptions.ParleyError)


def test_the_client_keeps_its_own_root() -> None:
    assert not issubclass(parley.client.ParleyAPIError, workers.exceptions.ParleyError)
    for name in ("QuestionExpiredError", "QuestionCancelledError", "QuestionTimeoutError"):
        assert issubclass(getattr(parley.client, name), parley.client.ParleyAPIError)


def test_no_two_exception_classes_share_a_name() -> None:
    found = classes(sources("workers", "bot", "parley"))
    exceptions = descendants(found, BUILTIN)
    names = Counter(name for name, _, _ in found if name in exceptions)
    assert [name for name, n in names.items() if n > 1] == []


def test_the_root_checks_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("class Oops(ValueError):\n    pass\nclass Fine(ParleyError):\n    pass\n")
    assert len(strays([bad])) == 1
