"""What an execution's code made, counted so that a replay numbers it alike.

Asks, says and history entries are numbered per execution. A replay skips a recorded step's
function, and the branch that `run.recorded` guards. So the step records what they made, and
the replay counts that instead. Secret answers opened there are opened again from their sealed
copies, for `run.secret`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workers.runtime.attempts import KeyCalls

COUNTED = ("asks", "says", "histories")
"""What a step counts of its function, so a replay that skips it numbers the rest alike."""


class Tally:
    """One execution's says and history entries so far, and the secrets it opened."""

    def __init__(self, keys: KeyCalls) -> None:
        self.keys = keys  # the asks are counted where their keys are given
        self.says = 0  # `run.say` calls so far, each done once under its number
        self.histories = 0  # `run.history` calls so far, each added once under its number
        self.secrets: dict[str, str] = {}  # secret answers by item id, this execution only (never recorded)
        self.opened: set[str] = set()  # every secret value this execution opened, for masking
        self.marks: dict[str, dict[str, int] | None] = {}  # step keys `recorded` read: counts when found absent
        self.claimed: dict[str, int] = {}  # counts up to which a recorded branch has taken what was made
        self._sealed: list[str] = []  # the questions whose secrets this execution opened, in order

    def now(self) -> dict[str, int]:
        """The asks, says and history entries counted so far, and secrets opened."""
        return {"asks": self.keys.asks, "says": self.says, "histories": self.histories, "secrets": len(self._sealed)}

    def between(self, before: dict[str, int], now: dict[str, int]) -> dict[str, Any]:
        """What was made between two counts: how many of each, and the secrets' questions."""
        made: dict[str, Any] = {k: now[k] - before[k] for k in COUNTED if now[k] > before[k]}
        if now["secrets"] > before["secrets"]:
            made["secrets"] = self._sealed[before["secrets"] : now["secrets"]]
        return made

    def branch(self, mark: dict[str, int], before: dict[str, int], now: dict[str, int]) -> dict[str, Any]:
        """What a branch made from `mark` to its step's call, that no other branch has taken.

        Branches may overlap, as tools a framework runs at once do. Each counted once, the
        branches' sum is what was made, which is all a replay needs.
        """
        start = {k: max(n, self.claimed.get(k, 0)) for k, n in mark.items()}
        made = self.between(start, {k: max(n, start[k]) for k, n in before.items()})
        self.claimed = {k: max(n, self.claimed.get(k, 0)) for k, n in now.items()}
        return made

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

    def skip(self, made: Any, sealed_copy: Callable[[str], dict[str, str] | None]) -> None:
        """Count what a function a replay skips made, and open its secrets again.

        `sealed_copy` reads a question's secret answers; None once the run ended since.
        """
        self.keys.skip(_count(made, "asks"))
        self.says += _count(made, "says")
        self.histories += _count(made, "histories")
        sealed = made.get("secrets") if isinstance(made, dict) else None
        for iid in sealed if isinstance(sealed, list) else []:
            values = sealed_copy(str(iid))
            if values is not None:  # gone: `run.secret` then says that none was given
                self.open_secrets(str(iid), values)


def _count(recorded: Any, what: str) -> int:
    """How many `what` (asks, says, histories) a recorded step made; 0 in older records."""
    n = recorded.get(what, 0) if isinstance(recorded, dict) else 0
    return n if isinstance(n, int) else 0
