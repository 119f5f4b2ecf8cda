"""Journal entry names: built by `workers.journal_names` alone, in the format existing journals hold."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from source_trees import walked

from workers import journal_names as names

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "workers" / "journal_names.py"
# A string that begins with one of these (or names one quoted, in Lua) spells a journal name itself.
SPELLED = re.compile(r"^(step|ask|fx|void|answered|people|lock|supersede|say|history|llm):")
QUOTED = re.compile(r"'(step|ask|fx|void|answered):'")


def test_the_stored_format_is_unchanged() -> None:
    """Journals written before the names had a home must replay: every name is byte for byte the old one."""
    assert names.step("fetch") == "step:fetch"
    assert names.ask("#1") == "ask:#1"
    assert names.effect(names.FINAL) == "fx:final"
    assert names.effect(names.say(2)) == "fx:say:2"
    assert names.effect(names.history(2)) == "fx:history:2"
    assert names.effect(names.lock("qA")) == "fx:lock:qA"
    assert names.effect(names.supersede("qB")) == "fx:supersede:qB"
    assert names.void("qC") == "void:qC"
    assert names.answered("qD") == "answered:qD"
    assert names.step(names.people("vote")) == "step:people:vote"
    assert names.step(names.llm_turn("triage:", 3)) == "step:triage:llm:3"
    assert names.ask(names.llm_ask("triage:", 3, "call_1")) == "ask:triage:ask:3:call_1"


def test_a_journal_reads_back_its_steps_and_asks() -> None:
    journal = {
        names.step("a"): {"v": 1},
        names.step(names.people("k")): {"v": ["U1"]},
        names.ask("k"): ["qX", "qY"],
        names.effect(names.FINAL): "done",
        names.void("qX"): {"changes": [], "digest": ""},
    }
    assert names.steps(journal) == {"a": 1, "people:k": ["U1"]}
    assert names.asked(journal) == {"k": ["qX", "qY"]}


def spelled_names(path: Path) -> list[str]:
    """String literals in `path` that spell a journal name rather than build it with `journal_names`."""
    found: set[str] = set()
    for node in walked(path):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            parts = [node.value]
        else:
            continue
        found |= {f"{path.name}:{node.lineno}: {p[:40]!r}" for p in parts if SPELLED.match(p) or QUOTED.search(p)}
    return sorted(found)


def sources() -> list[Path]:
    return [p for d in ("workers", "bot", "parley") for p in sorted((ROOT / d).rglob("*.py")) if p != HOME]


def test_no_module_but_journal_names_spells_a_journal_name() -> None:
    found = [hit for path in sources() for hit in spelled_names(path)]
    assert found == []


def test_the_spelling_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('x = f"fx:lock:{iid}"\nLUA = "if string.sub(f, 1, 4) == \'ask:\' then end"\ny = "step:" + k\n')
    assert len(spelled_names(bad)) == 3
