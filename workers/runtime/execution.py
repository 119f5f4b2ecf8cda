"""One execution of one run: its journal, its fenced writes, its effects done once.

The agent never sees this class. It holds an author's `Run` (`run.py`). A host holds a view of
the question (`host_view.py`). The modules that carry out the asks work on it through its public
names alone. Those are `run.py`, `ask_group.py` and `attempts.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar, cast

from workers.exceptions import NotSerializable, Suspend
from workers.logs import Log
from workers.runtime.attempts import KeyCalls
from workers.runtime.host import Host
from workers.runtime.lease import LeaseKeeper
from workers.runtime.plan import PlanSteps
from workers.runtime.tally import Tally
from workers.runtime.wiring import Runtime, RuntimeSettings
from workers.store import journal_names as names
from workers.store.ids import is_question
from workers.store.records import InterruptRecord, RunRecord
from workers.store.runs import RunStore

T = TypeVar("T")
STEP_MAX = 64 * 1024 * 1024
"""Characters of JSON a step may record: Redis refuses a value past 512 MB, and a write that big
would hold the worker retrying it while its lease holds."""
log = Log("parley.run")


class Execution(PlanSteps):
    """One execution of one run, bound to the epoch its worker claimed."""

    def __init__(
        self,
        runtime: Runtime,
        record: RunRecord,
        epoch: int,
        host: Host,
        keeper: LeaseKeeper,
        journal: dict[str, Any] | None = None,
        interrupts: dict[str, InterruptRecord | None] | None = None,
    ) -> None:
        self._rt = runtime
        self._record = record
        self._epoch = epoch
        self._host = host
        self._keeper = keeper
        self.retried_writes = 0  # store calls that met a Redis outage and were tried again
        self.progressed = False  # this execution recorded a step
        self.keys = KeyCalls()  # how often each ask key was called, walked by `attempts`
        self._journal: dict[str, Any] | None = journal  # read with the claim, or on first use
        self._interrupts: dict[str, InterruptRecord | None] = dict(interrupts or {})  # read with the claim
        self._ending: dict[str, Any] = {}  # journal entries the run's ending transition records (see `once`)
        self._pending: dict[str, Any] = {}  # entries left for the next write: repeatable effects' "done"
        self._parked: Suspend | None = None  # set as the run parks: nothing of it may run after that
        self.tally = Tally(self.keys)  # says, history entries and secrets, as a replay must count them
        self.log = log.bind(**record.log_context())

    @property
    def run_id(self) -> str:
        return self._record.id

    @property
    def started_by(self) -> str:
        return self._record.started_by

    @property
    def conversation(self) -> dict[str, Any]:
        return self._record.conversation

    @property
    def record(self) -> RunRecord:
        return self._record

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def host(self) -> Host:
        return self._host

    @property
    def store(self) -> RunStore:
        return self._rt.store

    @property
    def settings(self) -> RuntimeSettings:
        return self._rt.settings

    @property
    def signs_receipts(self) -> bool:
        """Whether this worker signs receipts, so a question's shown blocks are worth a digest."""
        return self._rt.receipts.signer is not None

    # ---- the journal -------------------------------------------------------------------
    def journal_entry(self, field: str) -> Any:
        """A journal entry. The journal is read once per execution.

        Only this execution, fenced by its epoch, writes to it while it runs.
        """
        if self._journal is None:
            self._journal = self.read(lambda: self.store.journal(self.run_id), "read the journal")
        return self._journal.get(field)

    def noted(self, entries: dict[str, Any]) -> None:
        """Keep entries a store call just journalled, so later reads see them."""
        for name in entries:
            self._pending.pop(name, None)
        if self._journal is not None:
            self._journal.update(entries)

    def write(self, field: str, value: Any) -> None:
        """Journal `value` under `field`, and with it the entries left for the next write."""
        also = dict(self._pending)
        self.durable(
            lambda: self.store.record(self.run_id, self._epoch, field, value, also=also),
            f"record {field}",
            carries_pending=True,
        )
        self.noted({**also, field: value})

    def suspend(self, question_id: str) -> NoReturn:
        """Park here: raise `Suspend`, and refuse every step from now on, in a `finally:` too.

        The run is parked already, so a step's `fn` would run at each park and never be recorded.
        """
        self._parked = Suspend(self.run_id, question_id)
        raise self._parked

    def not_parked(self) -> None:
        """Raise the park again once parked: code swallowing it may ask or step no more."""
        if self._parked is not None:
            raise self._parked

    def step(self, key: str, fn: Callable[[], T]) -> T:
        """Run `fn` once per run and record its JSON result; a replay returns the record.

        The first execution returns what the record holds too, so a tuple is a list, and a key
        a string, in every execution alike. A value JSON cannot hold fails the run at once.
        The record counts what `fn` made: asks, says, history entries, named keys' calls. A
        replay counts them too, so every later ask keeps its key and answer, and every later
        say its number. Tries that raised in this execution count with it, as a replay skips
        them too. So does what a `run.recorded(key, branch=True)` branch made.
        """
        self.not_parked()
        field = names.step(key)
        recorded = self.journal_entry(field)
        tally = self.tally
        if recorded is not None:
            if key not in tally.read or "branch" not in recorded:  # a branch read counted it all
                self._skip(recorded)
            return cast(T, recorded["v"])
        before = tally.failed.get(key) or tally.now()
        try:
            result = self._planned(key, fn)  # fn(), told to a host that draws the run's plan
        except Exception:
            tally.failed.setdefault(key, before)  # a retry in this execution records these tries too
            raise
        tally.failed.pop(key, None)
        made = tally.between(before, tally.now())
        branch = tally.close_branch(key)  # what was made since the key's read, `fn` and its tries too
        if branch:
            made = {**made, "branch": branch}
        try:
            dumped = json.dumps({"v": result, **made}, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise NotSerializable(f"step {key!r} returned a value that is not JSON: {exc}") from exc
        if len(dumped) > STEP_MAX:
            raise NotSerializable(f"step {key!r} returned {len(dumped)} characters of JSON; a step records {STEP_MAX}")
        kept = json.loads(dumped)
        self.write(field, kept)
        self.progressed = True
        self.log.info("step recorded", step=key)
        return cast(T, kept["v"])

    def read_step(self, key: str, *, branch: bool = False) -> Any:
        """What step `key` recorded, or None.

        With `branch`, the code after the read runs only when it finds nothing, and then calls the
        step. The first such read finding nothing opens the branch: what this context makes until
        the step is recorded with it. A replay's first read finds the record and counts that.
        """
        entry = self.journal_entry(names.step(key))
        if branch and key not in self.tally.read:
            self.tally.read.add(key)
            if entry is None:
                self.tally.open_branch(key)
            else:
                self._skip(entry.get("branch"))
        return entry

    def _skip(self, made: Any) -> None:
        """Count what a function this replay skips made, opening its secrets again."""

        def sealed_copy(iid: str) -> dict[str, str] | None:
            return self.read(lambda: self.store.secret_answers(self.run_id, iid), "read a secret answer")

        self.tally.skip(made, sealed_copy)

    def read_interrupt(self, iid: str) -> InterruptRecord | None:
        """An interrupt, read once per execution.

        Nothing else changes it while this execution owns the run. The first miss reads every
        question the journal names in one round trip, as a replay walks them all.
        """
        if iid not in self._interrupts:
            wanted = [iid, *(q for q in self._journalled_questions() if q != iid and q not in self._interrupts)]
            self._interrupts.update(self.read(lambda: self.store.interrupts(wanted), "read questions"))
        return self._interrupts[iid]

    def _journalled_questions(self) -> list[str]:
        """The ids of the questions the journal's ask keys hold, groups left out."""
        self.journal_entry(names.ASK)  # reads the journal once
        journal = self._journal or {}
        return [
            attempt
            for field, attempts in journal.items()
            if field.startswith(names.ASK) and isinstance(attempts, list)
            for attempt in attempts
            if isinstance(attempt, str) and is_question(attempt)
        ]

    # ---- writes that ride out an outage --------------------------------------------------
    def durable(self, call: Callable[[], T], what: str, *, carries_pending: bool = False) -> T:
        """Write through the store, riding out a Redis outage while the lease holds.

        Entries left for the next write (`once(..., repeatable=True)`) are written first. A `call` that
        records them itself says so with `carries_pending` (see `ending_journal`). Every later write of
        this execution then lands after them.
        """
        if self._pending and not carries_pending:
            self.write(*next(iter(self._pending.items())))  # `write` carries the rest with it
        return self.read(call, what)

    def read(self, call: Callable[[], T], what: str) -> T:
        """Read through the store, riding out a Redis outage as `durable` does.

        A read needs none of the entries left for the next write written before it.
        """
        first = True

        def attempt() -> T:
            nonlocal first
            if not first:
                self.retried_writes += 1
            first = False
            return call()

        return self._keeper.durable(attempt, what)

    # ---- effects done once ----------------------------------------------------------------
    def once(self, name: str, effect: Callable[[], Any], *, ends_run: bool = False, repeatable: bool = False) -> None:
        """Perform a host side effect at most once per run.

        Across a crash mid-call, it is performed at least once. The fenced "intent" write before the
        effect stops a worker that lost the run from performing it.

        With `ends_run`, the effect is the last thing before the transition ending this execution. That
        transition records its "done" (`ending_journal`). A crash in between repeats the effect, as a
        crash before a separate "done" write would.

        `repeatable` is for an effect whose repetition shows nothing new, like a message replaced by the
        same content. Its "done" goes with this execution's next write instead of its own write. A crash
        before that write repeats the effect and nothing else. It writes no intent. A replay repeats
        such an effect whether or not one was recorded. A worker that lost the run may perform it after
        the new worker did. It then just shows again what that one showed.
        """
        self.not_parked()
        field = names.effect(name)
        if self.journal_entry(field) == "done" or field in self._ending or field in self._pending:
            return
        if not repeatable:
            self.write(field, "intent")
        effect()
        if ends_run:
            self._ending[field] = "done"
        elif repeatable:
            self._pending[field] = "done"
        else:
            self.write(field, "done")

    def ending_journal(self) -> dict[str, Any]:
        """What the transition ending this execution records in the journal with it.

        That is the ending effects' "done" and the entries left for the next write (see `once`). Pass
        the transition to `durable` with `carries_pending=True`.
        """
        return {**self._pending, **self._ending}
