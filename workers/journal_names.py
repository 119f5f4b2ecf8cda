"""The names of a run's journal entries, built in one place, as `keys` builds keys.

A run's journal (`keys.journal`) maps a replay name to what was recorded under it. Two levels of
name meet there.
- The journal fields: `step:<key>`, `ask:<key>`, `fx:<effect>`, `void:<iid>`, `answered:<iid>`.
- Inside `step:` and `fx:`, the names of Parley's own steps and effects. These are
  `people:<key>`, `say:<n>`, `lock:<id>`, `supersede:<iid>`, `final`, `<prefix>llm:<turn>`. Ask
  keys are `<prefix>ask:<turn>:<call>`.
The stored format is fixed, since existing journals must replay. So a change here is a
migration. Lua scripts receive the prefixes they test as arguments. The module sits outside the
store and imports nothing of Parley's. So it serves the LLM loop in the agents' layer too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STEP = "step:"
"""Prefix of a recorded step's field; a step recorded is progress (`scripts.JOURNAL`)."""
ASK = "ask:"
"""Prefix of an ask key's field: the list of its attempts' ids (`scripts.PURGE` reads them)."""
EFFECT = "fx:"
"""Prefix of a host side effect's field: "intent", then "done"."""
VOID = "void:"
ANSWERED = "answered:"

FINAL = "final"
"""The effect that posts a run's final message (finished, failed or expired)."""


# ---- journal fields ---------------------------------------------------------------------------
def step(key: str) -> str:
    """The field of `run.step(key)`'s recorded result."""
    return f"{STEP}{key}"


def ask(key: str) -> str:
    """The field of ask key `key`'s attempts: question or group ids, oldest first."""
    return f"{ASK}{key}"


def effect(name: str) -> str:
    """The field of `run.once(name)`'s intent and done."""
    return f"{EFFECT}{name}"


def void(interrupt_id: str) -> str:
    """The field recording an answer voided by changed facts, and what changed."""
    return f"{VOID}{interrupt_id}"


def answered(interrupt_id: str) -> str:
    """The field a synchronous host's answer is recorded under, by whom."""
    return f"{ANSWERED}{interrupt_id}"


# ---- names of Parley's own steps and effects --------------------------------------------------
def say(n: int) -> str:
    """The effect of the run's `n`th `say`, counted from 1 per execution."""
    return f"say:{n}"


def history(n: int) -> str:
    """The effect of the run's `n`th `history` entry, counted from 1 per execution."""
    return f"history:{n}"


def lock(question_or_group_id: str) -> str:
    """The effect showing a closed question or `ask_each` group without controls."""
    return f"lock:{question_or_group_id}"


def supersede(interrupt_id: str) -> str:
    """The effect that marks a question whose answer is void as superseded."""
    return f"supersede:{interrupt_id}"


def edits(interrupt_id: str) -> str:
    """The effect recording an edited approval's fields in the run's history.

    The entry reads "approved with edits".
    """
    return f"edits:{interrupt_id}"


def people(key: str) -> str:
    """The step that resolves `ask_each`'s user groups to the people asked."""
    return f"people:{key}"


def llm_turn(prefix: str, turn: int) -> str:
    """The step recording a model's reply in turn `turn` of a `workers.llm` conversation."""
    return f"{prefix}llm:{turn}"


def llm_ask(prefix: str, turn: int, call_id: str) -> str:
    """The ask key of a model's question: tool call `call_id` in turn `turn`."""
    return f"{prefix}ask:{turn}:{call_id}"


# ---- reading a journal --------------------------------------------------------------------------
def steps(journal: Mapping[str, Any]) -> dict[str, Any]:
    """Every recorded step's value by its key."""
    return {k.removeprefix(STEP): v.get("v") for k, v in journal.items() if k.startswith(STEP)}


def asked(journal: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every ask key's attempts by the key."""
    return {k.removeprefix(ASK): list(v) for k, v in journal.items() if k.startswith(ASK)}
