"""Walking an ask key's attempts on replay, for every kind of ask.

It is written once for `run.ask`, `ask_all`/`ask_any` and `ask_each`. Each call of an ask key in
an execution is its next attempt. On replay, the attempts the journal lists are walked in order.
Each call counts against `max_asks_per_key`, and past it the run fails. An answer given on facts
that changed since is void. The walk then moves on to the next attempt. Once the journal has no
attempt left, the caller opens a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from workers.exceptions import AgentError
from workers.interaction import Context, ContextChange, answers_to_values
from workers.interaction.approval import decision_of
from workers.interaction.context import canonical, changes, digest
from workers.store import journal_names as names
from workers.store.records import InterruptRecord
from workers.store.run_writes import history_entry

if TYPE_CHECKING:  # the execution holds a `KeyCalls`; the walk reads the execution
    from workers.runtime.execution import Execution


class KeyCalls:
    """The ask keys of one execution: each one's calls, and whether facts changed."""

    def __init__(self) -> None:
        self._asks = 0  # calls that may name no key: "#1", "#2", ...
        self._key_calls: dict[str, int] = {}
        self._changed: dict[str, bool] = {}  # keys whose last answer follows one voided by changed facts
        self.listener: Callable[[str, str | None], None] | None = None  # told of each ask and key call

    def key(self, key: str | None) -> str:
        """Count one more ask, keyed `key` or by the ask's number."""
        self._asks += 1
        if self.listener is not None:
            self.listener("asks", None)
        return key or f"#{self._asks}"

    @property
    def asks(self) -> int:
        """How many asks this execution has counted so far."""
        return self._asks

    def skip(self, asks: int, keys: Any = None) -> None:
        """Count `asks`, and named keys' calls, made where a replay does not run."""
        self._asks += asks
        for key, n in keys.items() if isinstance(keys, dict) else ():
            if isinstance(n, int):
                self._key_calls[str(key)] = self._key_calls.get(str(key), 0) + n

    def named_calls(self) -> dict[str, int]:
        """Each named key's calls so far (a numbered key is never called again)."""
        return {k: n for k, n in self._key_calls.items() if not k.startswith("#")}

    def next_key(self) -> str:
        """The key the next ask that names none will be given."""
        return f"#{self._asks + 1}"

    def changed(self, key: str) -> bool:
        """Whether `key`'s last attempt was asked because the answer before was void."""
        return self._changed.get(key, False)

    def count(self, key: str, limit: int, *, changed: bool | None = None) -> int:
        """Count one more call of `key`, raising `AgentError` past `limit`.

        `changed`: whether this call is asked again because the answer before it was void.
        """
        n = self._key_calls[key] = self._key_calls.get(key, 0) + 1
        if self.listener is not None and not key.startswith("#"):
            self.listener("keys", key)
        if n > limit:
            raise AgentError(f"question {key!r} was asked {limit} times without a usable answer; giving up")
        if changed is not None:
            self._changed[key] = changed
        return n


def count_call(run: Execution, key: str) -> int:
    """Count one more call of `key` this execution, raising `AgentError` past the limit."""
    return run.keys.count(key, run.settings.max_asks_per_key)


class AttemptWalk:
    """The attempts of ask key `key`, walked one call at a time.

    Iterating yields `(n, id)` for each recorded attempt this execution reaches. The id is a
    question's, or an `ask_each` group's. The caller returns what the attempt holds, or goes on to
    the next (`continue`). The iteration ends when no recorded attempt is left. `attempts` and
    `voided` then hold what the new attempt opens with.
    """

    def __init__(self, run: Execution, key: str) -> None:
        self.run, self.key = run, key
        self.attempts: list[str] = list(run.journal_entry(names.ask(key)) or [])
        self.voided: list[ContextChange] | None = None  # what changed since the attempt before, when it was void

    def __iter__(self) -> Iterator[tuple[int, str]]:
        while True:
            n = self.run.keys.count(self.key, self.run.settings.max_asks_per_key, changed=self.voided is not None)
            if len(self.attempts) < n:
                return
            yield n, self.attempts[n - 1]

    def void(self, answered: InterruptRecord, bound: str, facts: Context | None) -> bool:
        """Whether `answered`'s answer is void because its facts changed.

        It is recorded once, and the walk then goes on.
        """
        self.voided = void_if_changed(self.run, answered, bound, facts)
        return self.voided is not None

    def missing(self, n: int) -> AgentError:
        return AgentError(f"question {self.key!r} attempt {n} is missing from the store")


def void_if_changed(
    run: Execution, interrupt: InterruptRecord, bound: str, facts: Context | None
) -> list[ContextChange] | None:
    """The changes that void `interrupt`'s answer, recorded once, or None.

    None means the answer stands. An answer voided once stays void for this run, whatever the facts
    later become. The void is journalled with its history entry in one step. The host then marks the
    old question superseded, once.
    """
    field = names.void(interrupt.id)
    recorded = run.journal_entry(field)
    if recorded is None:
        if interrupt.context_digest == digest(bound) or _bound_to_edits(interrupt, bound):
            return None
        found = changes(interrupt.context, facts)
        recorded = {"changes": [c.model_dump(mode="json") for c in found], "digest": digest(bound)}
        entry = history_entry(
            "context changed",
            interrupt_id=interrupt.id,
            key=interrupt.key,
            attempt=interrupt.attempt,
            fields=[c.field for c in found],
            old_digest=interrupt.context_digest,
            new_digest=digest(bound),
        )
        void: dict[str, Any] = recorded
        run.durable(
            lambda: run.store.record(run.run_id, run.epoch, field, void, only_if_absent=True, history=entry),
            "record that an answer is void",
        )
        run.noted({field: recorded})
        run.log.info("answer void: the facts changed", key=interrupt.key, fields=[c.field for c in found])
    voided = [ContextChange.model_validate(c) for c in recorded["changes"]]
    record = run.record
    run.once(names.supersede(interrupt.id), lambda: run.host.question_superseded(record, interrupt, voided))
    return voided


def _bound_to_edits(interrupt: InterruptRecord, bound: str) -> bool:
    """Whether `bound` is the args an approval was given with its edits applied.

    An agent proposing what was approved does not change the facts.
    """
    if interrupt.request.approval is None or not bound:
        return False
    values = answers_to_values(interrupt.request, interrupt.answers)
    approved = decision_of(interrupt.request, values)
    return approved.edited and canonical(approved.args) == bound
