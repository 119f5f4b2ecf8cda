"""What an execution's code made, counted so that a replay numbers it alike.

Asks, says and history entries are numbered per execution, and each named ask key counts its
calls. A replay skips a recorded step's function, and the branch a `run.recorded(key,
branch=True)` read guards. So the step records what they made, and the replay counts that
instead. Secret answers opened there are opened again from their sealed copies, for
`run.secret`.

A branch counts what is made in its own context (`contextvars`). So a branch inside another is
counted in both, as a replay skipping the outer one never reads the inner one. Branches open at
once in other tasks, as tools a framework runs together, count only their own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from workers.runtime.attempts import KeyCalls

COUNTED = ("asks", "says", "histories")
"""What a step counts of its function, so a replay that skips it numbers the rest alike."""


@dataclass(eq=False)
class _Branch:
    """One open branch: its tally, and what its context has made since it opened."""

    tally: Tally
    made: dict[str, Any] = field(default_factory=dict)
    open: bool = True


_OPEN: ContextVar[tuple[_Branch, ...]] = ContextVar("parley_open_branches", default=())
"""The branches open in this context, outermost first."""


class Tally:
    """One execution's asks, says and history entries so far, and the secrets it opened."""

    def __init__(self, keys: KeyCalls) -> None:
        self.keys = keys  # the asks are counted where their keys are given
        keys.listener = self._made
        self.says = 0  # `run.say` calls so far, each done once under its number
        self.histories = 0  # `run.history` calls so far, each added once under its number
        self.secrets: dict[str, str] = {}  # secret answers by item id, this execution only (never recorded)
        self.opened: set[str] = set()  # every secret value this execution opened, for masking
        self.read: set[str] = set()  # step keys read with `branch`: a replay counts each branch once
        self.failed: dict[str, dict[str, Any]] = {}  # counts when a step's function first raised
        self._branches: dict[str, _Branch] = {}  # branches read absent, until their step records
        self._sealed: list[str] = []  # the questions whose secrets this execution opened, in order
        self._lock = threading.Lock()  # tools a framework runs in threads may say at once

    def now(self) -> dict[str, Any]:
        """The asks, says, history entries, named keys' calls and secrets counted so far."""
        counts: dict[str, Any] = {"asks": self.keys.asks, "says": self.says, "histories": self.histories}
        return {**counts, "keys": self.keys.named_calls(), "secrets": len(self._sealed)}

    def between(self, before: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
        """What was made between two counts: how many of each, and the secrets' questions."""
        made: dict[str, Any] = {k: now[k] - before[k] for k in COUNTED if now[k] > before[k]}
        keys = {k: n - before["keys"].get(k, 0) for k, n in now["keys"].items() if n > before["keys"].get(k, 0)}
        if keys:
            made["keys"] = keys
        if now["secrets"] > before["secrets"]:
            made["secrets"] = self._sealed[before["secrets"] : now["secrets"]]
        return made

    def open_branch(self, key: str) -> None:
        """Count from here what this context makes, as step `key`'s branch."""
        branch = _Branch(self)
        self._branches[key] = branch
        _OPEN.set((*(b for b in _OPEN.get() if b.open and b.tally is self), branch))

    def close_branch(self, key: str) -> dict[str, Any]:
        """What step `key`'s branch made since it opened, its step's function too; {} if none."""
        branch = self._branches.pop(key, None)
        if branch is None:
            return {}
        branch.open = False
        return branch.made

    def said(self) -> int:
        """Count one more say, and return its number: one each, whatever thread says it."""
        with self._lock:
            self.says += 1
            self._made("says")
            return self.says

    def added(self) -> int:
        """Count one more history entry, and return its number."""
        with self._lock:
            self.histories += 1
            self._made("histories")
            return self.histories

    def _made(self, what: str, key: str | None = None, n: int = 1) -> None:
        """Count `n` things made in each branch open in this context."""
        for branch in _OPEN.get():
            if not branch.open or branch.tally is not self:
                continue
            if what == "keys" and key is not None:
                keys = branch.made.setdefault("keys", {})
                keys[key] = keys.get(key, 0) + n
            elif what == "secrets" and key is not None:
                branch.made.setdefault("secrets", []).append(key)
            else:
                branch.made[what] = branch.made.get(what, 0) + n

    def open_secrets(self, question_id: str | None, values: dict[str, str]) -> None:
        """Keep secret answers `ask` returned, for `run.secret` and for masking.

        A step records the questions its function opened, and a replay opens them again.
        """
        if not values:
            return
        self.secrets.update(values)
        self.opened.update(values.values())
        if question_id:
            self._sealed.append(question_id)
            self._made("secrets", question_id)

    def skip(self, made: Any, sealed_copy: Callable[[str], dict[str, str] | None]) -> None:
        """Count what a function a replay skips made, and open its secrets again.

        `sealed_copy` reads a question's secret answers; None once the run ended since.
        """
        if not isinstance(made, dict):
            return
        given = made.get("keys")
        keys: dict[str, Any] = given if isinstance(given, dict) else {}
        self.keys.skip(_count(made, "asks"), keys)
        self.says += _count(made, "says")
        self.histories += _count(made, "histories")
        for what in COUNTED:  # skipped inside an open branch: a replay skipping that branch skips it too
            if n := _count(made, what):
                self._made(what, n=n)
        for key, n in keys.items():
            if isinstance(n, int) and not str(key).startswith("#"):
                self._made("keys", str(key), n)
        sealed = made.get("secrets")
        for iid in sealed if isinstance(sealed, list) else []:
            values = sealed_copy(str(iid))
            if values is not None:  # gone: `run.secret` then says that none was given
                self.open_secrets(str(iid), values)


def _count(recorded: dict[str, Any], what: str) -> int:
    """How many `what` (asks, says, histories) a recorded step made; 0 in older records."""
    n = recorded.get(what, 0)
    return n if isinstance(n, int) else 0
