"""How `QuestionService` reads questions: one, a page of them, or a secret answer once.

A caller reads only what it may see (`caller.visible`), and any other id reads as no question.
A closed question's due receipts are written before its close is reported.
"""

from __future__ import annotations

import math

from workers.exceptions import SecretUnreadable
from workers.logs import Log
from workers.questions.admission import field_error
from workers.questions.caller import Caller, owns, visible
from workers.questions.exceptions import (
    QuestionConflict,
    QuestionGone,
    QuestionInvalid,
    QuestionNotFound,
    SecretsUnavailable,
)
from workers.questions.models import QuestionPage, QuestionStatus, QuestionView
from workers.questions.views import build_view, unreadable_view
from workers.runtime.wiring import Runtime
from workers.store.questions import QuestionStore, UnreadableQuestion
from workers.store.records import ApiQuestionRecord, InterruptRecord

log = Log("parley.questions")


class QuestionReads:
    """Reads for `QuestionService`, which provides `runtime` and `store`."""

    runtime: Runtime
    store: QuestionStore

    def _record(self, caller: Caller, question_id: str) -> ApiQuestionRecord | UnreadableQuestion:
        record = self.store.read(question_id) if question_id.isascii() and len(question_id) < 100 else None
        if record is None or not visible(caller, record):
            raise QuestionNotFound(f"no question {question_id!r}")
        return record

    def _readable(self, caller: Caller, question_id: str) -> ApiQuestionRecord:
        record = self._record(caller, question_id)
        if isinstance(record, UnreadableQuestion):
            raise QuestionConflict(f"question {question_id} cannot be read: {record.error}")
        return record

    def _view(self, record: ApiQuestionRecord | UnreadableQuestion) -> tuple[QuestionView, str]:
        """The question as the API shows it, and the interrupt it waits on.

        An unreadable question says so.
        """
        view, interrupt_id, _ = self._view_and_question(record)
        return view, interrupt_id

    def _view_and_question(
        self, record: ApiQuestionRecord | UnreadableQuestion
    ) -> tuple[QuestionView, str, InterruptRecord | None]:
        """As `_view`, with the run's own question as read.

        It is None for a quorum's question, or before there is one.
        """
        if isinstance(record, UnreadableQuestion):
            return unreadable_view(record), "", None
        try:
            run = self.runtime.store.find(record.id)
            interrupt = self.runtime.store.interrupt(run.interrupt) if run is not None and run.interrupt else None
            shared = None
            if record.quorum is not None and interrupt is None and run is not None and run.interrupt:
                group = self.runtime.store.groups.group(run.interrupt)  # each person's question, one message
                shared = group.message if group is not None else None
            view = build_view(record, run, interrupt, shared)
            return view, (run.interrupt if run is not None else ""), interrupt
        except (ValueError, KeyError, TypeError) as exc:  # its run or question: written by another version
            log.error("a question's run cannot be read", run_id=record.id, error=repr(exc))
            error = str(exc).splitlines()[0]
            unreadable = UnreadableQuestion(record.id, record.token, record.team, record.created_at, error)
            return unreadable_view(unreadable), "", None

    def _refer(self, record: ApiQuestionRecord, question: InterruptRecord | None) -> None:
        """Once the run's question holds the request and context, keep them there alone (`QuestionStore.refer`).

        Only a single question asked as given qualifies; a failure here costs bytes, never the question."""
        if question is None or question.run_id != record.id or question.group or record.quorum is not None:
            return
        if question.request != record.request or question.context != record.context:
            return
        try:
            self.store.refer(record, question.id)
        except Exception as exc:  # Redis went away after posting: the record keeps its own copy
            log.warning("could not leave the request to the question", run_id=record.id, error=repr(exc))

    def get(self, caller: Caller, question_id: str) -> QuestionView:
        view = self._view(self._record(caller, question_id))[0]
        self._receipts_first(view)
        return view

    def _receipts_first(self, view: QuestionView) -> None:
        """Write a closed question's due receipts before the API reports its close.

        With the key here, no answer of the API shows a close without its receipt.
        Without it, a worker writes them, and the receipt route says so meanwhile.
        """
        if view.status is not QuestionStatus.WAITING and self.runtime.receipts.signer is not None:
            self.runtime.receipts.write_for_run(view.id)

    def asked_by(self, caller: Caller, question_id: str) -> ApiQuestionRecord:
        """The question if `caller` asked it.

        Any other caller, an admin too, is told there is no such question.
        """
        record = self._record(caller, question_id)
        if not owns(caller, record):
            raise QuestionNotFound(f"no question {question_id!r}")
        if isinstance(record, UnreadableQuestion):
            raise QuestionGone(f"question {question_id!r} cannot be read, so neither can its secret answers")
        return record

    def reveal(self, caller: Caller, question_id: str) -> QuestionView:
        """The question with its secret answers in the clear, once, for its asker.

        Before the answer, or without a secret, this is the plain view and uses nothing up. The first
        read of an answered question's secrets deletes their sealed copy. Every later read is
        `QuestionGone` (410). So is a read after retention deleted them.
        """
        record = self.asked_by(caller, question_id)
        view, iid = self._view(record)
        given = [i.id for i in record.request.items if i.is_secret and view.answers and view.answers.get(i.id)]
        if view.status is not QuestionStatus.ANSWERED or not given or view.answers is None:
            return view  # nothing secret was given (yet): nothing to read, nothing used up
        box = self.runtime.store.box
        if box is None:
            raise SecretsUnavailable("PARLEY_SECRET_KEY is not set here, so secret answers cannot be opened")
        for _ in range(3):  # a copy kept by the run between our read and our claim: read it again
            found = self.store.sealed_secrets(record.id, iid)
            if found is None:
                break
            sealed, kept = found
            try:
                values = box.open(sealed)
            except SecretUnreadable as exc:
                raise SecretsUnavailable(str(exc)) from None
            if self.store.claim_secrets(record.id, sealed if kept else None, self.runtime.settings.retention):
                log.info("secret answers revealed", run_id=record.id, interrupt_id=iid, origin=caller.name)
                shown = {k: values.get(k, v) for k, v in view.answers.items()}
                return view.model_copy(update={"answers": shown})
        raise QuestionGone(
            f"the secret answers of question {question_id!r} were read once already, or are no longer kept"
        )

    def list(
        self, caller: Caller, status: QuestionStatus | None = None, limit: int = 20, cursor: str | None = None
    ) -> QuestionPage:
        """The caller's questions, newest first (an admin's: all).

        `cursor` comes from the page before.
        """
        limit = max(1, min(limit, 100))
        before = page_cursor(cursor)
        found: list[QuestionView] = []
        next_cursor: str | None = None
        owner = None if caller.admin else caller.owner
        while len(found) < limit:
            rows = self.store.page(owner, before, 100, legacy=caller.name, since=caller.since)
            if not rows:
                break
            scores = dict(rows)  # the index's times: the cursor goes on past a record that cannot be read
            for record in self.store.many(scores):
                before = scores[record.id]
                if not visible(caller, record):
                    continue
                view = self._view(record)[0]
                if status is None or view.status is status:
                    found.append(view)
                if len(found) == limit:
                    next_cursor = repr(before)
                    break
            else:
                before = rows[-1][1]  # past this chunk, records gone meanwhile included
            if len(rows) < 100:
                break
        return QuestionPage(questions=found, next_cursor=next_cursor)


def page_cursor(cursor: str | None) -> float | None:
    """The time a page starts before, read from the `next_cursor` the last page gave."""
    if cursor is None:
        return None
    try:
        before = float(cursor)
    except ValueError:
        before = math.nan
    if not math.isfinite(before):  # "nan" and "inf" read as floats, and Redis refuses them as a score
        detail = "cursor must be a next_cursor from an earlier page"
        raise QuestionInvalid(detail, [field_error(["cursor"], detail)])
    return before
