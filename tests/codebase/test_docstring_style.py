"""Docstrings stay brief: short plain sentences, few clauses joined by semicolons.

The project guide asks for sentences of 8 to 12 words, and one plain sentence over three joined clauses.
This measures each package (workers, bot, parley) over its modules', classes' and functions' docstrings.
Two figures are held: the mean words per sentence, and the share of docstrings with a semicolon.

How a docstring is read:
- Inline code in backticks counts as one word, and its semicolons do not count.
- Blocks indented four spaces or more (code, tables, trees) are not prose, so they are skipped.
- A paragraph's end, a list item's end and `.`, `!` or `?` each end a sentence.
- So a summary line without a full stop still counts as a sentence of its own.
- Abbreviations such as "e.g." and "i.e." end no sentence.
"""

from __future__ import annotations

import ast
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import pytest
from source_trees import walked

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workers", "bot", "parley")
MAX_MEAN_WORDS = 12.0
MAX_SEMICOLON_SHARE = 0.10

INLINE_CODE = re.compile(r"``.+?``|`[^`]+`")
LIST_ITEM = re.compile(r"^([-*+]|\d+[.)])\s+")
ABBREVIATIONS = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "no."}
WORDLESS = re.compile(r"^[\W_]+$")
DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Style:
    """What a set of docstrings measures: counts of docstrings, semicolons and sentence lengths."""

    docstrings: int
    with_semicolon: int
    sentence_words: tuple[int, ...]

    @property
    def semicolon_share(self) -> float:
        return self.with_semicolon / self.docstrings if self.docstrings else 0.0

    @property
    def mean_words(self) -> float:
        return statistics.fmean(self.sentence_words) if self.sentence_words else 0.0

    def __str__(self) -> str:
        return (
            f"{self.docstrings} docstrings, {self.semicolon_share:.0%} with a semicolon, "
            f"{len(self.sentence_words)} sentences of {self.mean_words:.1f} words on average"
        )


def prose_units(doc: str) -> list[str]:
    """The docstring's paragraphs and list items as single lines, code blocks left out."""
    units: list[list[str]] = [[]]
    item_indent = None  # the indent of the list item being read, if any
    for line in doc.splitlines():
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if not text or indent >= 4:
            units.append([])
            item_indent = None
        elif LIST_ITEM.match(text):
            units.append([LIST_ITEM.sub("", text)])
            item_indent = indent
        elif item_indent is not None and indent <= item_indent:
            units.append([text])  # a line back at the list's margin ends the list
            item_indent = None
        else:
            units[-1].append(text)
    return [" ".join(unit) for unit in units if unit]


def sentence_lengths(doc: str) -> list[int]:
    """Words in each sentence of `doc`, with inline code counted as one word."""
    lengths = []
    for unit in prose_units(doc):
        words = 0
        for token in INLINE_CODE.sub("CODE", unit).split():
            if WORDLESS.match(token):
                continue
            words += 1
            if token.rstrip("\"')]").endswith((".", "!", "?")) and token.lower() not in ABBREVIATIONS:
                lengths.append(words)
                words = 0
        if words:
            lengths.append(words)
    return lengths


def has_semicolon(doc: str) -> bool:
    """Whether the prose of `doc` joins clauses with a semicolon (code excluded)."""
    return any(";" in INLINE_CODE.sub("CODE", unit) for unit in prose_units(doc))


def measure(paths: list[Path]) -> Style:
    docstrings = with_semicolon = 0
    lengths: list[int] = []
    for path in paths:
        for node in walked(path):
            doc = ast.get_docstring(node) if isinstance(node, DOCUMENTED) else None
            if doc:
                docstrings += 1
                with_semicolon += has_semicolon(doc)
                lengths += sentence_lengths(doc)
    return Style(docstrings, with_semicolon, tuple(lengths))


def problems(style: Style) -> list[str]:
    found = []
    if style.mean_words > MAX_MEAN_WORDS:
        found.append(f"sentences run {style.mean_words:.1f} words on average (at most {MAX_MEAN_WORDS:g})")
    if style.semicolon_share > MAX_SEMICOLON_SHARE:
        found.append(f"{style.semicolon_share:.0%} of docstrings have a semicolon (at most {MAX_SEMICOLON_SHARE:.0%})")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_docstrings_use_short_plain_sentences(package: str) -> None:
    style = measure(sorted((ROOT / package).rglob("*.py")))
    assert style.docstrings > 0
    assert problems(style) == [], f"{package}: {style}"


def test_the_checker_fails_on_long_joined_sentences(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        '"""A module whose docstrings run long, as this one does, with clause after clause after clause."""\n\n\n'
        "def f() -> None:\n"
        '    """Do the thing; then do the other thing, which matters because the first one alone is not enough."""\n'
    )
    style = measure([bad])
    assert style.docstrings == 2
    assert style.sentence_words == (16, 18)
    assert len(problems(style)) == 2


def test_the_checker_passes_short_sentences_and_skips_code(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text(
        '"""Queue a run for `workers.runtime.run_agent`; it starts soon.\n\n'
        "Each item below is a sentence of its own:\n\n"
        "- the run's id, e.g. `run_1`\n"
        "- its agent\n\n"
        "Usage::\n\n"
        "    queue(run); start(run)  # code, however long its lines may be, is not prose at all\n"
        '"""\n'
    )
    style = measure([good])
    assert style.sentence_words == (8, 9, 5, 2, 1)
    assert style.with_semicolon == 1
    assert not has_semicolon("Uses `a; b` and\n\n    x = 1; y = 2\n")
