"""`TerminalHost`: a synchronous host that asks the person at this terminal and waits.

`parley run` executes a run inline, so a question never parks: `solicit` puts each
item to the person, checks the whole set of answers with the port's validation,
asks again only the items that were refused, and returns the answers. Progress
and outcomes are printed to the terminal.
"""

from __future__ import annotations

from typing import Protocol

from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples
from prompt_toolkit.shortcuts import print_formatted_text

from bot.terminal.prompts import STYLE, TerminalPrompter
from workers.exceptions import RunSignal
from workers.interaction import Answer, AnswerError, AnswerValue, Item, Outcome, Request, RunView
from workers.store.records import InterruptRecord, RunRecord


class Aborted(RunSignal):
    """The person quit answering (Ctrl-C or end of input); the execution stops without failing the run."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"run {run_id}: answering was aborted at the terminal")


class Prompter(Protocol):
    """What the host needs from the controls; the tests pass a scripted one."""

    def ask(self, item: Item) -> AnswerValue: ...

    def problem(self, item: Item, message: str) -> None: ...


def _print(fragments: StyleAndTextTuples) -> None:
    print_formatted_text(FormattedText(fragments), style=STYLE)


class TerminalHost:
    """Implements `Host` for runs whose conversation is ``{"host": "terminal"}``."""

    def __init__(self, prompter: Prompter | None = None) -> None:
        self._prompter: Prompter = prompter or TerminalPrompter()
        self.reported: set[str] = set()
        """Runs whose outcome (finished or failed) this host has printed."""

    # ---- Interactor ------------------------------------------------------------
    def solicit(self, request: Request, run: RunView) -> Outcome:
        """Ask every item, re-ask the refused ones, and return the answers; never pauses."""
        _print([("", "\n"), ("class:question", request.reason), ("", "\n")])
        values: dict[str, AnswerValue] = {}
        pending = list(request.items)
        try:
            while True:
                for item in pending:
                    values[item.id] = self._prompter.ask(item)
                answers = [Answer.for_item(i, values[i.id]) for i in request.items if values.get(i.id) is not None]
                try:
                    return Outcome(paused=False, answers=request.validate_answers(answers))
                except AnswerError as exc:
                    pending = [i for i in request.items if i.id in exc.errors]
                    if not pending:  # problems with no item to ask again: nothing a person can fix here
                        raise
                    for item in pending:
                        self._prompter.problem(item, exc.errors[item.id])
        except (KeyboardInterrupt, EOFError):
            raise Aborted(run.run_id) from None

    # ---- Host: telling people how the run goes ------------------------------------
    def say(self, run: RunRecord, text: str) -> None:
        _print([("class:hint", "» "), ("", text)])

    def finished(self, run: RunRecord, result: str) -> None:
        self.reported.add(run.id)
        _print([("", "\n"), ("class:done", "✔ "), ("", f"Done: {result}")])

    def failed(self, run: RunRecord, reason: str) -> None:
        self.reported.add(run.id)
        _print([("", "\n"), ("class:problem", "✘ "), ("", f"Failed: {reason}")])

    def question_closed(self, run: RunRecord, interrupt: InterruptRecord) -> None:
        who = interrupt.closed_by or interrupt.answered_by
        subject = interrupt.request.reason.splitlines()[0]
        _print([("class:hint", f"The question '{subject}' was {interrupt.state}{f' by {who}' if who else ''}.")])

    def remind(self, run: RunRecord, interrupt: InterruptRecord) -> None:
        _print([("class:hint", f"Reminder: run {run.id} is waiting on {', '.join(interrupt.assignees)}.")])

    def notice(self, text: str) -> None:
        """A plain line from the `parley run` command itself (run started, retrying, stopped)."""
        _print([("class:hint", text)])
