"""`TerminalHost`: a synchronous host that asks the person at this terminal and waits.

`parley run` executes a run inline, so a question normally does not park. `solicit` puts each
item to the person. It checks the whole set of answers with the port's validation. It asks again
only the refused items, then returns the answers. If the person quits instead (Ctrl-C, end of
input), the question parks like any host's. It stays open and answerable. So
`parley run --resume` carries the run on, or a worker once someone answers elsewhere. The items
answered before quitting are kept as a draft (`DraftKeeper`). They are pre-filled when the
question is asked again. Progress and outcomes are printed to the terminal.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples
from prompt_toolkit.shortcuts import print_formatted_text

from bot.terminal.prompts import STYLE, TerminalPrompter
from workers.interaction import (
    Answer,
    AnswerError,
    AnswerValue,
    AskingRun,
    Context,
    ContextChange,
    GroupInfo,
    Item,
    Outcome,
    QuestionInfo,
    QuestionProgress,
    Request,
    RunInfo,
)
from workers.interaction.context import describe_change, show_value


class Prompter(Protocol):
    """What the host needs from the controls, scripted in the tests."""

    def ask(self, item: Item) -> AnswerValue: ...

    def problem(self, item: Item, message: str) -> None: ...


def _as_prompted(request: Request, item: Item) -> Item:
    """`item` as the prompt asks it.

    A required choice may be skipped, if its "type your own" item may stand in for it.
    """
    if item.required and request.typed_other(item.id) is not None:
        return item.model_copy(update={"required": False})
    return item


class DraftKeeper(Protocol):
    """Where items answered before quitting are kept per question, in the store's `Drafts`."""

    def keep(self, interrupt_id: str, values: Mapping[str, AnswerValue], expires_at: float | None) -> None: ...

    def read(self, interrupt_id: str) -> dict[str, AnswerValue]: ...

    def drop(self, interrupt_id: str) -> None: ...


_MENTION = re.compile(r"<@([UW][A-Z0-9]{2,20})>")


def _print(fragments: StyleAndTextTuples) -> None:
    print_formatted_text(FormattedText(fragments), style=STYLE)


class TerminalHost:
    """Implements `Interactor` for runs whose conversation is ``{"host": "terminal"}``."""

    def __init__(self, prompter: Prompter | None = None, drafts: DraftKeeper | None = None) -> None:
        self._prompter: Prompter = prompter or TerminalPrompter()
        self.drafts = drafts
        """Where answered items are kept when the person quits mid-question; None keeps nothing."""
        self.reported: set[str] = set()
        """Runs whose outcome (finished or failed) this host has printed."""
        self.stopped: set[str] = set()
        """Runs whose question the person quit (Ctrl-C or end of input); they are paused on it."""
        self._shown: set[tuple[str, ...]] = set()
        """What was printed about a question (its id, what happened): printed lines cannot be updated
        in place, so a second call for the same thing (a replay) prints nothing."""

    # ---- Interactor ------------------------------------------------------------
    def solicit(self, request: Request, run: AskingRun) -> Outcome:
        """Ask every item, re-ask refused ones, return the answers, and pause on quitting.

        Several questions at once (`ask_all`, `ask_any`) come here one after another. An `ask_each`
        question comes once per person, named before it is asked.
        """
        progress = getattr(run, "question_progress", None)
        if progress is not None and progress.answering:
            line = f"Asked of each person separately ({progress.summary}); answering for {progress.answering}:"
            _print([("", "\n"), ("class:hint", line)])
        expires_at = time.time() + request.expires_in if request.expires_in else None
        try:
            answers = self.collect(
                request,
                request.validate_answers,
                context=run.question_context,
                changes=run.context_changes,
                draft=(run.interrupt_id, expires_at) if run.interrupt_id else None,
            )
            return Outcome(paused=False, answers=answers)
        except (KeyboardInterrupt, EOFError):
            self.stopped.add(run.run_id)
            return Outcome(paused=True)

    def collect(
        self,
        request: Request,
        check: Callable[[list[Answer]], list[Answer]],
        *,
        context: Context | None = None,
        changes: Sequence[ContextChange] = (),
        draft: tuple[str, float | None] | None = None,
    ) -> list[Answer]:
        """Put `request` to the person until `check` takes the answers.

        Returns what `check` returned. `context`, the facts the answer is bound to, is shown under the
        reason. `changes` is shown above it: what changed since an earlier answer was voided. `check`
        raises `AnswerError` to refuse. The refused items are asked again, each with its reason.
        Quitting raises KeyboardInterrupt or EOFError. `draft` is the question's id and expiry. The
        items answered before quitting are kept for it, and pre-filled next time.
        """
        _print([("", "\n"), ("class:question", request.reason), ("", "\n")])
        if changes:
            _print([("class:problem", "The facts changed since the last answer, so it no longer applies:")])
            for change in changes:
                _print([("", f"  {describe_change(change)}")])
        if context is not None:
            _print([("class:hint", "You are deciding on:")])
            for name, value in context.items():
                _print([("", f"  {name}: {show_value(value)}")])
        values: dict[str, AnswerValue] = {}
        drafted = self.drafts.read(draft[0]) if self.drafts and draft else {}
        pending = list(request.items)
        while True:
            try:
                for item in pending:
                    values[item.id] = self._prompter.ask(prefilled(_as_prompted(request, item), drafted.get(item.id)))
            except (KeyboardInterrupt, EOFError):
                if self.drafts and draft:
                    self.drafts.keep(draft[0], draft_values(request, {**drafted, **values}), draft[1])
                raise
            answers = [Answer.for_item(i, values[i.id]) for i in request.items if values.get(i.id) is not None]
            try:
                accepted = check(answers)
                if self.drafts and draft and drafted:
                    self.drafts.drop(draft[0])
                return accepted
            except AnswerError as exc:
                refused = {*exc.errors, *(o.id for k in exc.errors if (o := request.typed_other(k)))}
                pending = [i for i in request.items if i.id in refused]
                if not pending:  # problems with no item to ask again: nothing a person can fix here
                    raise
                for item in pending:
                    if item.id in exc.errors:
                        self._prompter.problem(item, exc.errors[item.id])

    # ---- Host: telling people how the run goes ------------------------------------
    def say(self, run: RunInfo, text: str) -> None:
        _print([("class:hint", "» "), ("", text)])

    def finished(self, run: RunInfo, result: str) -> None:
        """The result, with Slack-style mentions (`<@U0ALICE>`) shown as names (`@U0ALICE`)."""
        self.reported.add(run.id)
        shown = _MENTION.sub(r"@\1", result)
        _print([("", "\n"), ("class:done", "✔ "), ("", f"Done: {shown}")])

    def failed(self, run: RunInfo, reason: str) -> None:
        self.reported.add(run.id)
        _print([("", "\n"), ("class:problem", "✘ "), ("", f"Failed: {reason}")])

    def _first_time(self, *shown: str) -> bool:
        """True the first time this host is asked to print `shown`.

        False for every repeat.
        """
        if shown in self._shown:
            return False
        self._shown.add(shown)
        return True

    def question_closed(self, run: RunInfo, interrupt: QuestionInfo) -> None:
        if not self._first_time("closed", interrupt.id, interrupt.state.value):
            return
        who = interrupt.closed_by or interrupt.answered_by
        subject = interrupt.request.reason.splitlines()[0]
        _print([("class:hint", f"The question '{subject}' was {interrupt.state}{f' by {who}' if who else ''}.")])

    def question_superseded(self, run: RunInfo, interrupt: QuestionInfo, changes: list[ContextChange]) -> None:
        if not self._first_time("superseded", interrupt.id):
            return
        subject = interrupt.request.reason.splitlines()[0]
        _print([("class:problem", f"The answer to '{subject}' is superseded: the facts changed.")])

    def remind(self, run: RunInfo, interrupt: QuestionInfo, *, last_call: bool = False) -> None:
        kind = "Last call" if last_call else "Reminder"
        _print([("class:hint", f"{kind}: run {run.id} is waiting on {', '.join(interrupt.assignees)}.")])

    def claimed(self, run: RunInfo, interrupt: QuestionInfo, *, by: str, released: bool) -> None:
        """Only mention a claim, a Slack feature, as the terminal asks whoever is there."""
        _print([("class:hint", f"Run {run.id}'s question was {'released' if released else 'claimed'} by {by}.")])

    def group_progress(self, run: RunInfo, group: GroupInfo, progress: QuestionProgress) -> None:
        if not self._first_time("progress", group.id, progress.summary, str(progress.closed)):
            return
        who = f": {', '.join(progress.answered)}" if progress.answered else ""
        _print([("class:hint", f"{progress.summary}{who}.")])

    def escalated(self, run: RunInfo, interrupt: QuestionInfo, added: list[str]) -> None:
        """Only mention an escalation, a Slack feature, as the terminal asks whoever is there."""
        _print([("class:hint", f"Run {run.id}'s question was escalated to {', '.join(added) or 'no one new'}.")])

    def reassigned(self, run: RunInfo, interrupt: QuestionInfo, *, by: str, to: str) -> None:
        """Only mention a reassignment, a Slack feature, as the terminal asks whoever is there."""
        _print([("class:hint", f"Run {run.id}'s question was reassigned to {to} by {by}.")])

    def people(self, run: RunInfo, ids: list[str]) -> list[str]:
        """The people `ids` name, with user groups kept as given.

        The terminal has no workspace directory, so a group is asked as one person.
        """
        return list(ids)

    def notice(self, text: str) -> None:
        """A plain line from the `parley run` command itself (run started, retrying, stopped)."""
        _print([("class:hint", text)])


def prefilled(item: Item, drafted: AnswerValue) -> Item:
    """`item` defaulting to what the person answered before quitting.

    The controls pre-fill it.
    """
    if drafted is None or drafted == [] or item.is_secret:
        return item
    return item.model_copy(update={"default": drafted})


def draft_values(request: Request, values: Mapping[str, AnswerValue]) -> dict[str, AnswerValue]:
    """What is worth keeping of `values`: answers to the request's items, never secrets."""
    kept = {i.id for i in request.items if not i.is_secret}
    return {k: v for k, v in values.items() if k in kept and v is not None and v != []}
