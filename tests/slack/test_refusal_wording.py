"""How a refused answer reads in Slack, reason by reason (no Slack, no Redis)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack.refusals import refusal_text
from workers.runtime.acceptance import AnswerOutcome
from workers.store.records import RefusalReason
from workers.store.refusal import Refusal

pytestmark = pytest.mark.unit


def refused(reason: RefusalReason, **detail: Any) -> str:
    return refusal_text(AnswerOutcome.refused("q1", "U0CAROL", Refusal(reason, **detail)))


def test_already_answered_says_by_whom_and_when_without_a_doubled_at() -> None:
    text = refused(RefusalReason.ANSWERED, by="U0BOB", at=1_760_000_000.0)
    assert text == (
        "This question was already answered by <@U0BOB>, "
        "<!date^1760000000^{date_short_pretty} at {time}|2025-10-09 08:53 UTC>."
    )
    assert refused(RefusalReason.ANSWERED, by="U0BOB") == "This question was already answered by <@U0BOB>."


def test_invalid_answers_are_named_by_their_labels_escaped() -> None:
    text = refused(
        RefusalReason.INVALID,
        errors={"description": "an answer is required", "form": "state.values must be an object"},
        labels={"description": "Describe the <bug>"},
    )
    assert text == (
        ":warning: Your answer was not accepted:\n"
        "• *Describe the &lt;bug&gt;*: an answer is required\n"
        "• state.values must be an object"
    )


def test_a_click_elsewhere_says_where_the_question_is() -> None:
    assert refused(RefusalReason.WRONG_PLACE, channel="C0GENERAL") == (
        "This question was asked in <#C0GENERAL>; it can only be answered on its own message there."
    )
    assert refused(RefusalReason.WRONG_PLACE, channel="D0BOB") == (
        "This question was asked in another conversation; it can only be answered on its own message there."
    )


def test_a_question_no_longer_needed_says_so() -> None:
    text = refused(RefusalReason.NOT_NEEDED)
    assert text == "This question is no longer needed: the run went on without it, so your answer was not recorded."
