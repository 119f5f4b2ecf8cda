"""bench/README.md leads with today's figures, and its links all resolve.

The README holds today's figures and the method, short enough to read.
Every earlier figure lives in bench/HISTORY.md, with its date and commit.
Links into either file must reach an existing file and heading.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor in a Markdown text, outside fenced code blocks."""
    prose = re.sub(r"(?ms)^```.*?^```", "", text)
    return {slug(h) for h in HEADING.findall(prose)}


def broken_links(doc: Path) -> list[str]:
    """Relative links in ``doc`` whose file or heading does not exist."""
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        heading_missing = file.suffix == ".md" and file.exists() and anchor and anchor not in anchors(file.read_text())
        if not file.exists() or heading_missing:
            broken.append(f"{doc.name}: {target}")
    return broken


def test_the_bench_readme_leads_with_todays_figures_in_300_lines() -> None:
    text = (BENCH / "README.md").read_text()
    lines = len(text.splitlines())
    assert lines <= 300, f"bench/README.md has {lines} lines; move the history to bench/HISTORY.md"
    sections = HEADING.findall(re.sub(r"(?ms)^```.*?^```", "", text))
    assert sections[1] == "Today's figures", sections[:3]
    assert "[HISTORY.md](HISTORY.md)" in text


def test_every_link_into_and_within_the_bench_docs_resolves() -> None:
    docs = sorted([*BENCH.glob("*.md"), *ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md")])
    broken = []
    for doc in docs:
        found = broken_links(doc)
        broken += [b for b in found if doc.parent == BENCH or "bench/" in b]
    assert broken == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## The ack's tail, against 5eca01c\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](other.md#the-acks-tail-against-5eca01c) [gone](missing.md#x) [no heading](other.md#nowhere)\n"
        "[web](https://example.com/x) [self](#doc)\n\n# Doc\n\n```sh\n# not a heading\n```\n"
    )
    assert broken_links(doc) == ["doc.md: missing.md#x", "doc.md: other.md#nowhere"]
    assert "not-a-heading" not in anchors(doc.read_text())
