"""The pieces of the metrics that need no process: label mapping, answer surfaces, the multiprocess directory."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from slack_sdk.http_retry.response import HttpResponse

from bot.ack_timing import timed
from bot.listeners.actions import on_choose, on_open_form, on_submit
from bot.listeners.views import on_form_submission
from bot.slack.webapi_metrics import method_of, outcome_of
from parley.metrics_setup import ENV, prepare, use_multiprocess
from workers import metrics
from workers.store.records import RefusalReason

pytestmark = pytest.mark.unit


def test_method_is_the_last_path_segment() -> None:
    assert method_of("https://slack.com/api/chat.postMessage") == "chat.postMessage"
    assert method_of("http://127.0.0.1:9/api/views.open?x=1") == "views.open"


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (200, {"ok": True}, "ok"),
        (200, {"ok": False, "error": "channel_not_found"}, "error"),
        (429, {}, "rate_limited"),
        (503, {}, "server_error"),
        (404, {}, "http_error"),
    ],
)
def test_outcome_words(status: int, body: dict[str, object], outcome: str) -> None:
    assert outcome_of(HttpResponse(status_code=status, headers={}, body=body), None) == outcome
    assert outcome in metrics.SLACK_OUTCOMES


def test_an_error_without_a_response_is_a_connection_error() -> None:
    assert outcome_of(None, ConnectionResetError()) == "connection_error"


def test_answer_surfaces() -> None:
    """Each answer listener is timed under its own surface; opening a form is not an answer."""
    assert on_submit.surface == "submit"  # type: ignore[attr-defined]
    assert on_choose.surface == "choice"  # type: ignore[attr-defined]
    assert on_form_submission.surface == "form"  # type: ignore[attr-defined]
    assert not hasattr(on_open_form, "surface")
    with pytest.raises(ValueError, match="unknown answer surface"):
        timed("open_form")


def _ack_count(surface: str) -> float:
    return next(
        s.value
        for m in metrics.SUBMIT_ACK.collect()
        for s in m.samples
        if s.name.endswith("_count") and s.labels.get("surface") == surface
    )


def test_a_timed_listener_is_observed_even_when_it_raises() -> None:
    before = _ack_count("form")

    @timed("form")
    def listener(ack: object, body: dict[str, object]) -> None:
        raise RuntimeError("listener failed")

    with pytest.raises(RuntimeError):
        listener(ack=None, body={})
    assert _ack_count("form") == before + 1
    assert inspect.getfullargspec(listener).args == ["ack", "body"]  # the names bolt injects arguments by


def test_every_refusal_reason_is_exposed_from_the_start() -> None:
    text = generate_latest().decode()
    for reason in RefusalReason:
        assert f'parley_answer_refusals_total{{reason="{reason.value}"}}' in text


def test_an_operators_directory_is_emptied_of_earlier_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "counter_123.db"
    stale.write_bytes(b"x")
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    monkeypatch.setenv(ENV, str(tmp_path))
    assert use_multiprocess() == tmp_path
    assert not stale.exists() and keep.exists()


def test_without_a_directory_one_of_its_own_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "")  # recorded, so the test leaves the variable as it found it
    monkeypatch.delenv(ENV)
    path = use_multiprocess()
    try:
        assert os.environ[ENV] == str(path) and path.is_dir() and not any(path.iterdir())
    finally:
        path.rmdir()
        os.environ.pop(ENV, None)


@pytest.mark.parametrize(
    ("serves", "several", "given", "multiprocess"),
    [
        (True, True, False, True),  # serve --workers 2
        (True, False, True, True),  # one process, the operator's directory
        (True, False, False, False),  # one process: in memory
        (False, False, True, False),  # a CLI command: the operator's variable is dropped
    ],
)
def test_prepare_picks_the_mode(
    serves: bool, several: bool, given: bool, multiprocess: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "given"))
    if not given:
        monkeypatch.delenv(ENV)
    prepare(serves_metrics=serves, several_processes=several)
    try:
        assert (ENV in os.environ) is multiprocess
        if given and multiprocess:
            assert os.environ[ENV] == str(tmp_path / "given") and (tmp_path / "given").is_dir()
    finally:
        made = os.environ.get(ENV)
        if made and not given:
            Path(made).rmdir()
