"""Run, question and group ids: minted by `workers.store.ids`, their kind read by its functions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workers.store import ids

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
# Reading an id's kind by its first letter, or minting one by hand, outside `workers.store.ids`.
BY_HAND = re.compile(r"""startswith\(["'][gqr]["']\)|f["'][gqr]\{secrets\.token_urlsafe""")


def test_each_kind_is_minted_and_read_back() -> None:
    question, group, run = ids.new_question_id(), ids.new_group_id(), ids.new_id(ids.RUN)
    assert ids.is_question(question) and not ids.is_group(question)
    assert ids.is_group(group) and not ids.is_question(group)
    assert not ids.is_group(run) and not ids.is_question(run)
    assert len({ids.new_question_id() for _ in range(100)}) == 100


def test_ids_keep_the_stored_shape() -> None:
    """Ids already in Redis (and in Slack messages' action ids) must still be read as before."""
    assert re.fullmatch(r"q[A-Za-z0-9_-]{22}", ids.new_question_id())
    assert re.fullmatch(r"g[A-Za-z0-9_-]{22}", ids.new_group_id())
    assert re.fullmatch(r"r[A-Za-z0-9_-]{16}", ids.new_id(ids.RUN))


def by_hand(path: Path) -> list[str]:
    return [f"{path.name}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1) if BY_HAND.search(line)]


def test_no_module_reads_an_id_kind_by_hand() -> None:
    home = ROOT / "workers" / "store" / "ids.py"
    paths = [p for d in ("workers", "bot", "parley") for p in sorted((ROOT / d).rglob("*.py")) if p != home]
    assert [hit for p in paths for hit in by_hand(p)] == []


def test_the_by_hand_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('if gid.startswith("g"):\n    iid = f"q{secrets.token_urlsafe(16)}"\n')
    assert by_hand(bad) == ["bad.py:1", "bad.py:2"]
