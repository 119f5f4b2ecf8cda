"""The Temporal integration's parts that need no server: the wait helper's bookkeeping, the outcome, the
API's checks of a `temporal` target and a quorum, the settings, and how admins see the waiting workflow."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

from bot.slack.blocks_inspect import inspect_view
from parley.runs_cmd import temporal_workflow
from parley.settings import load
from workers.exceptions import ConfigError
from workers.integrations import temporal as parley_temporal
from workers.interaction import Decision as PortDecision
from workers.questions import signals
from workers.questions.config import QuestionConfig, TemporalConfig
from workers.questions.models import QuestionCreate
from workers.runtime.admin import RunDetail
from workers.store.records import RunRecord, RunStatus, TemporalTarget

pytestmark = pytest.mark.unit

TARGET = {"workflow_id": "refund-1", "namespace": "default", "key": "tw-1"}
REQUEST = {"reason": "Ship?", "items": [{"id": "ship", "text": "Ship", "type": "boolean"}], "assignees": ["U0A", "U0B"]}


def test_the_wait_helper_keeps_the_first_outcome_of_its_own_question_and_ignores_repeats() -> None:
    waits = parley_temporal._Waits()
    waits.keys |= {"tw-1", "tw-2"}  # drawn by the workflow's asks
    waits.expect("tw-1", "r1")
    waits.on_outcome({"key": "tw-1", "question_id": "r1", "status": "answered", "answers": {"ship": True}})
    waits.on_outcome({"key": "tw-1", "question_id": "r1", "status": "cancelled"})  # a retried delivery
    waits.on_outcome({"key": "tw-2", "question_id": "r2", "status": "expired"})  # held until tw-2 is awaited
    waits.on_outcome({"question_id": "r3"})  # not one of ours
    waits.on_outcome({"key": "tw-9", "question_id": "r9", "status": "answered"})  # a key this run never drew
    waits.on_outcome("noise")  # type: ignore[arg-type]
    assert waits.ignored == 4 and "tw-9" not in waits.outcomes
    assert (waits.outcome("tw-1") or {}).get("status") == "answered" and waits.outcome("tw-2") is None
    waits.expect("tw-2", "r2")
    assert (waits.outcome("tw-2") or {}).get("status") == "expired"


def test_the_wait_helper_ignores_another_questions_outcome_for_its_key_before_or_after_its_own_id() -> None:
    waits = parley_temporal._Waits()
    waits.keys.add("tw-1")
    forged = {"key": "tw-1", "status": "answered", "decision": {"approved": True, "args": {"amount": 999999}}}
    waits.on_outcome({**forged, "question_id": "r_early"})  # before the activity returned the question's id
    waits.expect("tw-1", "r1")
    waits.on_outcome({**forged, "question_id": "r_late"})
    assert waits.outcome("tw-1") is None and waits.ignored == 2
    own = {"key": "tw-1", "question_id": "r1", "status": "answered", "decision": {"approved": False}}
    waits.on_outcome(own)
    assert waits.outcome("tw-1") == own


def test_an_outcome_is_read_from_the_signal_leaving_fields_it_does_not_know() -> None:
    outcome = parley_temporal.QuestionOutcome.of(
        {"key": "tw-1", "question_id": "r1", "status": "answered", "answers": {"a": 1}, "by": "U0A", "new": 1}
    )
    assert (outcome.question_id, outcome.answered, outcome.answers, outcome.by) == ("r1", True, {"a": 1}, "U0A")
    assert not parley_temporal.QuestionOutcome.of({"question_id": "r2", "status": "expired"}).answered


RECEIPT = {
    "question_id": "i1",
    "run_id": "r1",
    "workspace": "T1",
    "sequence": 3,
    "digest": {"sha256": "ab" * 32},
    "envelope": {"payloadType": "application/vnd.in-toto+json", "payload": "e30=", "signatures": []},
}


@pytest.mark.parametrize("converter", [DataConverter.default, pydantic_data_converter], ids=["default", "pydantic"])
def test_approves_decision_with_its_receipt_crosses_temporals_payload_converters(converter: DataConverter) -> None:
    decision = parley_temporal.Decision(
        approved=True, args={"amount": 80}, edited=True, changes=[("amount", 120, 80)], by="U0A", receipt=RECEIPT
    )

    async def crossed() -> parley_temporal.Decision:
        if converter is pydantic_data_converter:  # the model itself, typed back
            [back] = await converter.decode(await converter.encode([decision]), [parley_temporal.Decision])
            return back  # type: ignore[no-any-return]
        # the default converter: a workflow's JSON result, as `decision.model_dump(mode="json")` gives it
        [raw] = await converter.decode(await converter.encode([decision.model_dump(mode="json")]))
        return parley_temporal.Decision.model_validate(raw)

    back = asyncio.run(crossed())
    assert back == decision and back.receipt == RECEIPT


def test_the_ports_decision_is_unchanged_and_temporals_adds_only_the_receipt() -> None:
    added = set(parley_temporal.Decision.model_fields) - set(PortDecision.model_fields)
    assert added == {"receipt"} and "receipt" not in PortDecision.model_fields
    assert isinstance(parley_temporal.Decision(approved=False, args={}), PortDecision)
    with pytest.raises(ValidationError, match="receipt"):
        PortDecision.model_validate({"approved": True, "args": {}, "receipt": RECEIPT})


def test_the_signal_names_the_key_and_carries_the_outcome() -> None:
    view = {"id": "r1", "status": "answered", "answers": {"ship": True}, "answered_by": "U0A", "decision": None}
    payload = signals.outcome_payload(view, TemporalTarget(**TARGET))
    assert payload["key"] == "tw-1" and payload["question_id"] == "r1" and payload["by"] == "U0A"
    assert signals.SIGNAL == parley_temporal.SIGNAL


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"temporal": TARGET, "callback_url": "https://example.com/hook"}, "at most one delivery target"),
        ({"temporal": {**TARGET, "key": ""}}, "at least 1 character"),
        ({"quorum": 3}, "more than the 2 people"),
        ({"quorum": 0}, "greater than or equal to 1"),
        ({"quorum": 2, "callback_url": "https://example.com/hook"}, "no webhook is sent"),
    ],
)
def test_a_bad_target_or_quorum_is_refused_saying_why(fields: dict[str, object], error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        QuestionCreate.model_validate({"request": REQUEST, "channel": "C0OPS", **fields})


def test_a_quorum_needs_a_channel_and_assignees() -> None:
    with pytest.raises(ValidationError, match="quorum asks each"):
        QuestionCreate.model_validate({"request": REQUEST, "user": "U0A", "quorum": 1})
    body = QuestionCreate.model_validate({"request": REQUEST, "channel": "C0OPS", "quorum": 2, "temporal": TARGET})
    assert body.quorum == 2 and body.temporal is not None and body.temporal.key == "tw-1"


def test_temporal_settings_are_read_and_the_tls_pair_goes_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARLEY_TEMPORAL_ADDRESS", "temporal.internal:7233")
    monkeypatch.setenv("PARLEY_TEMPORAL_RETRY_INTERVALS", "1, 5,30")
    settings = load()
    assert settings.parley_temporal_address == "temporal.internal:7233"
    assert settings.parley_temporal_namespace == "default"
    assert settings.parley_temporal_retry_intervals == [1, 5, 30]
    monkeypatch.setenv("PARLEY_TEMPORAL_TLS_KEY", "/etc/parley/temporal.key")
    with pytest.raises(ConfigError, match=r"PARLEY_TEMPORAL_TLS_KEY: .*set both or neither"):
        load()


def test_runs_show_and_inspect_name_the_waiting_workflow_and_its_namespace() -> None:
    target = {"temporal": {"workflow_id": "refund-1", "namespace": "billing"}}
    assert temporal_workflow(target) == "refund-1 (namespace billing)"
    assert temporal_workflow({"channel": "C0OPS"}) == ""
    run = RunRecord(
        id="rQ1",
        agent="question",
        text="",
        started_by="ci",
        status=RunStatus.PAUSED,
        created_at=1.0,
        updated_at=2.0,
        conversation=target,
    )
    shown = str(inspect_view(RunDetail(run=run, interrupt=None)))
    assert "*Temporal workflow* `refund-1` · namespace `billing`" in shown


def test_the_client_key_is_never_shown() -> None:
    config = QuestionConfig(temporal=TemporalConfig(address="t:7233", tls_cert=b"CERT", tls_key=b"PRIVATE-KEY"))
    assert "PRIVATE-KEY" not in repr(config) and "PRIVATE-KEY" not in str(config)
