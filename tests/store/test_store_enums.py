"""Close modes and group states: one `StrEnum` each, shared by Python and the Lua scripts."""

from __future__ import annotations

import re

import pytest

from workers.store import group_scripts, scripts
from workers.store.groups import GroupRecord
from workers.store.records import CloseMode, GroupState

pytestmark = pytest.mark.unit


def test_each_close_mode_names_its_history_event() -> None:
    """The history events runs already hold: the mode -> event mapping is written once."""
    assert {m.value: m.event for m in CloseMode} == {"answer": "answered", "expire": "expired", "cancel": "cancelled"}
    assert CloseMode("expire").event == "expired"


def test_a_stored_group_state_reads_as_the_enum() -> None:
    fields = {"id": "gX", "run_id": "rX", "mode": "all", "need": "1", "members": "[]"}
    assert GroupRecord.from_hash(fields).state is GroupState.OPEN
    for state in GroupState:
        assert GroupRecord.from_hash({**fields, "state": state.value}).state is state


@pytest.mark.parametrize("name", ["CLOSE", "CLOSE_MEMBER"])
def test_the_closing_scripts_spell_no_mode_or_group_state(name: str) -> None:
    """The scripts compare with the enums' values, defined once as Lua constants (M_…, G_…)."""
    lua = getattr(scripts, name, None) or getattr(group_scripts, name)
    assert not re.search(r"ARGV\[6\] [~=]= '", lua)
    assert not re.search(r"KEYS\[3\], 'state', '", lua)
    assert all(f"local M_{m.name} = '{m.value}'" in lua for m in CloseMode)
