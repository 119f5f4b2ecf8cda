"""Walking an ask key's attempts on replay, written once for `run.ask`, `ask_all`/`ask_any` and `ask_each`.

Each call of an ask key in an execution is its next attempt. On replay the attempts the journal
lists are walked in order: each call counts against `max_asks_per_key` (past it the run fails),
an answer given on facts that have changed since is void and moves the walk on to the next
attempt, and once the journal has no attempt left the caller opens a new one.
"""

from __future__ import annotations

from collections.abc import Iterator

from workers.exceptions import AgentError
from workers.interaction import Context, ContextChange
from workers.runtime.execution import Execution
from workers.store import journal_names as names
from workers.store.records import InterruptRecord


def count_call(run: Execution, key: str) -> int:
    """Count one more call of `key` in this execution; `AgentError` once past the limit."""
    n = run._key_calls[key] = run._key_calls.get(key, 0) + 1
    limit = run._rt.settings.max_asks_per_key
    if n > limit:
        raise AgentError(f"question {key!r} was asked {limit} times without a usable answer; giving up")
    return n


class AttemptWalk:
    """The attempts of ask key `key`, walked one call at a time.

    Iterating yields `(n, id)` for each recorded attempt this execution reaches (a question's id,
    or an `ask_each` group's); the caller returns what the attempt holds, or goes on to the next
    (`continue`). The iteration ends when no recorded attempt is left: `attempts` and `voided`
    are then what the new attempt is opened with.
    """

    def __init__(self, run: Execution, key: str) -> None:
        self.run, self.key = run, key
        self.attempts: list[str] = list(run._recorded(names.ask(key)) or [])
        self.voided: list[ContextChange] | None = (
            None  # what changed since the attempt before, when its answer was void
        )

    def __iter__(self) -> Iterator[tuple[int, str]]:
        while True:
            n = count_call(self.run, self.key)
            self.run._changed[self.key] = self.voided is not None  # attempt n is asked again because the facts changed
            if len(self.attempts) < n:
                return
            yield n, self.attempts[n - 1]

    def void(self, answered: InterruptRecord, bound: str, facts: Context | None) -> bool:
        """Whether `answered`'s answer is void because its facts changed (recorded once); the walk then goes on."""
        self.voided = self.run._void_if_changed(answered, bound, facts)
        return self.voided is not None

    def missing(self, n: int) -> AgentError:
        return AgentError(f"question {self.key!r} attempt {n} is missing from the store")
