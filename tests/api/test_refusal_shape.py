"""A refusal has one shape, `workers.store.refusal.Refusal`, from the Lua reply to the words a host shows."""

from __future__ import annotations

import dataclasses
import json

import pytest

from workers.runtime.acceptance import AcceptRefused, AnswerOutcome, plain_text
from workers.store.records import RefusalReason
from workers.store.refusal import POSTING, Refusal

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ([0, b"answered", b"U1", b"1760000000.5"], Refusal(RefusalReason.ANSWERED, by="U1", at=1760000000.5)),
        ([0, b"answered", b"U1", b""], Refusal(RefusalReason.ANSWERED, by="U1")),
        ([0, b"cancelled", b"U-admin"], Refusal(RefusalReason.CANCELLED, by="U-admin")),
        ([0, b"expired", b"1700.0"], Refusal(RefusalReason.EXPIRED, at=1700.0)),
        ([0, b"not_due", b""], Refusal(RefusalReason.NOT_DUE)),
        ([0, b"not_open", b"running"], Refusal(RefusalReason.NOT_OPEN, status="running")),
        (
            [0, b"not_allowed", json.dumps(["U1", "U2"]).encode()],
            Refusal(RefusalReason.NOT_ALLOWED, assignees=("U1", "U2")),
        ),
        ([0, b"not_needed"], Refusal(RefusalReason.NOT_NEEDED)),
        ([0, b"unknown"], Refusal(RefusalReason.UNKNOWN)),
    ],
)
def test_a_script_reply_decodes_into_named_fields(reply: list[object], expected: Refusal) -> None:
    assert Refusal.from_reply(reply) == expected


def test_the_error_and_the_outcome_carry_the_same_value() -> None:
    refusal = Refusal(RefusalReason.ANSWERED, by="U1", at=1.0)
    error = AcceptRefused(refusal)
    outcome = AnswerOutcome.refused("q1", "U2", error.refusal)
    assert error.reason is outcome.reason is RefusalReason.ANSWERED
    assert outcome.refusal is refusal and str(error) == "already answered by U1"
    assert not outcome.ok and AnswerOutcome.accepted("q1", "U2", "r1").reason is None


def test_a_refusal_is_one_frozen_value() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Refusal(RefusalReason.UNKNOWN).by = "U1"  # type: ignore[misc]


def test_every_reason_has_plain_words() -> None:
    for reason in RefusalReason:
        assert plain_text(Refusal(reason))
    assert plain_text(Refusal(RefusalReason.NOT_OPEN, status=POSTING)).startswith("this question is still being posted")
