"""Source files parsed once per process: the tests of code rules read the same modules many times.

`test_layers`, `test_exception_tree`, `test_concept_names`, `test_journal_names` and
`test_docs_references` each walk every module of Parley. Parsing was most of their time, so a
file is parsed once per version (its size and modification time) and its nodes listed once.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def _version(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


@functools.cache
def _parsed(path: Path, version: tuple[int, int]) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


@functools.cache
def _walked(path: Path, version: tuple[int, int]) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(_parsed(path, version)))


def parsed(path: Path) -> ast.Module:
    """The syntax tree of `path`; callers must not change it, since others share it."""
    return _parsed(path, _version(path))


def walked(path: Path) -> tuple[ast.AST, ...]:
    """Every node of `path`'s tree, in `ast.walk` order."""
    return _walked(path, _version(path))
