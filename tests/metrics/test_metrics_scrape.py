"""Prometheus metrics of live processes: a real `parley serve` and `parley worker --metrics-port`s,
driven by signed Slack payloads against the Web API stand-in, scraped and parsed with
prometheus_client's own parser, and counted exactly.

The scenario is deterministic: one run answered after two refused clicks and a 429 on the
worker's `chat.update`, one run left paused; then a worker killed while it runs a run, so the
sweep of another worker finds the lapsed lease and queues the run again.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from slack_payloads import EVENTS_PATH, FORM, signed_headers, slash_command_body
from slack_stack import SlackStack, free_port

pytestmark = pytest.mark.system

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture()
def stack(redis_url: str, tmp_path: Any) -> Iterator[SlackStack]:
    env = {"PARLEY_LEASE_TTL": "3", "PARLEY_REQUEUE_GRACE": "30", "PARLEY_STARTS_PER_USER": "12/min"}
    yield from SlackStack.running(redis_url, tmp_path / "metrics", workers=0, extra_env=env)


def scrape(url: str) -> tuple[str, Samples]:
    """The exposition at `url`, parsed: {(sample name, sorted labels): value}."""
    resp = httpx.get(url, timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    return _parse(resp.text)


def _parse(text: str) -> tuple[str, Samples]:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; a labelled series never created reads as 0, a missing metric fails."""
    assert any(n == name for n, _ in samples), f"{name} is not exposed"
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def slack_calls(samples: Samples) -> Counter[tuple[str, str]]:
    return Counter(
        {
            (dict(lbl)["method"], dict(lbl)["outcome"]): int(v)
            for (n, lbl), v in samples.items()
            if n == "parley_slack_api_calls_total" and v
        }
    )


def outcome(call: dict[str, Any]) -> str:
    """What the stand-in did with a call, in the metric's words."""
    status = call["status"]
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server_error"
    return "error" if call.get("error") else "ok"


def test_scraped_counts_after_runs_driven_through_slack(stack: SlackStack) -> None:
    worker_port = free_port()
    first = stack.spawn_worker("worker-a", "--metrics-port", str(worker_port))
    bot_url = f"http://127.0.0.1:{stack.port}/metrics"
    worker_url = f"http://127.0.0.1:{worker_port}/metrics"
    stack.wait_for("the worker's metrics endpoint", lambda: _answers(worker_url))

    # ---- one run answered: a refusal for someone not asked, the answer, a second click too late
    run = stack.start_run("s-form", "metrics one")
    question = stack.question(run)
    stack.ws.faults.fail_next("chat.update", status=429, retry_after=1)  # the worker's lock of the question
    not_asked, _ = stack.submit(run, question, {"Colour": "Red"}, user="U0EVE")
    answered, _ = stack.submit(run, question, {"Colour": "Green"})
    late, _ = stack.submit(run, question, {"Colour": "Blue"})
    assert (not_asked.status_code, answered.status_code, late.status_code) == (200, 200, 200)
    stack.wait_status(run, "succeeded")
    paused = stack.start_run("s-form", "metrics two")
    stack.question(paused)
    stack.settle()

    text, bot = scrape(bot_url)
    _, worker = scrape(worker_url)
    assert value(bot, "parley_runs_started_total", agent="s-form") == 2
    assert value(bot, "parley_questions_answered_total") == 1
    assert value(bot, "parley_question_answer_seconds_count") == 1
    assert value(bot, "parley_answer_refusals_total", reason="not_allowed") == 1
    assert value(bot, "parley_answer_refusals_total", reason="answered") == 1
    refused = sum(v for (n, _), v in bot.items() if n == "parley_answer_refusals_total")
    assert refused == 2
    assert value(bot, "parley_submit_ack_seconds_count", surface="submit") == 3
    assert value(bot, "parley_submit_ack_seconds_count", surface="choice") == 0
    assert value(worker, "parley_questions_asked_total") == 2
    assert value(worker, "parley_runs_ended_total", agent="s-form", status="succeeded") == 1
    assert value(worker, "parley_resume_seconds_count") == 1
    assert value(worker, "parley_slack_api_calls_total", method="chat.update", outcome="rate_limited") == 1
    assert value(worker, "parley_lease_lapses_total", outcome="requeued") == 0
    for samples in (bot, worker):
        assert value(samples, "parley_runs_paused") == 1  # read from Redis: the same on every endpoint
    # Every Web API call the stand-in served is counted once, by the process that made it.
    served = Counter((c["method"], outcome(c)) for c in stack.calls())
    assert slack_calls(bot) + slack_calls(worker) == served
    assert sum(n for (m, _), n in served.items() if m == "chat.postEphemeral") == 2, served  # the refusals
    # Bounded labels: no user, run or question id anywhere in the exposition.
    iid = stack.redis.hget(f"parley:run:{run.run_id}", "interrupt") if stack.redis else None
    for unbounded in ("U0BOB", "U0EVE", run.run_id, paused.run_id, (iid or b"").decode() or "no-iid"):
        assert unbounded not in text

    # ---- a worker killed while it runs a run: another worker's sweep re-queues it
    gate = "metrics-gate"
    lapsing = stack.start_run("s-gate", f'{{"gate": "{gate}"}} metrics three')
    stack.wait_status(lapsing, "running")
    second_port = free_port()
    stack.spawn_worker("worker-b", "--metrics-port", str(second_port))
    second_url = f"http://127.0.0.1:{second_port}/metrics"
    stack.wait_for("the second worker's metrics endpoint", lambda: _answers(second_url))
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    stack.wait_for("the sweep to find the lapsed lease", lambda: _lapses(second_url) == 1, timeout=40)
    (stack.data_dir / "gates").mkdir(exist_ok=True)
    (stack.data_dir / "gates" / gate).touch()
    stack.question(lapsing, timeout=30)

    _, second = scrape(second_url)
    _, bot = scrape(bot_url)
    assert value(second, "parley_lease_lapses_total", outcome="requeued") == 1
    assert value(second, "parley_lease_lapses_total", outcome="failed") == 0
    assert value(second, "parley_runs_requeued_total", cause="lease_lapsed") == 1
    assert value(second, "parley_runs_requeued_total", cause="no_job") == 0
    assert value(second, "parley_questions_asked_total") == 1
    assert value(bot, "parley_runs_started_total", agent="s-gate") == 1
    assert value(bot, "parley_runs_paused") == 2


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _lapses(url: str) -> float:
    return value(scrape(url)[1], "parley_lease_lapses_total", outcome="requeued")


def test_several_server_processes_report_one_sum(stack: SlackStack) -> None:
    """`parley serve --workers 2`: whichever uvicorn process answers a scrape reports every process's counts;
    the start limit (`PARLEY_STARTS_PER_USER=12/min`) is shared by the processes through Redis."""
    port = free_port()
    stack.spawn_serve("serve-2", port, "--workers", "2")
    url = f"http://127.0.0.1:{port}"
    stack.wait_for("the two-process server", lambda: _answers(f"{url}/healthz"), timeout=30)
    started = 12
    for n in range(started):
        with httpx.Client(base_url=url, timeout=15) as fresh:  # a new connection each: spread over processes
            body = slash_command_body(f"s-form multi {n}", user="U0BOB", channel="C0GENERAL")
            resp = fresh.post(EVENTS_PATH, content=body.encode(), headers=signed_headers(body, FORM))
            assert (resp.status_code, resp.text) == (200, "")
    body = slash_command_body("s-form one too many", user="U0BOB", channel="C0GENERAL")
    resp = httpx.post(f"{url}{EVENTS_PATH}", content=body.encode(), headers=signed_headers(body, FORM), timeout=15)
    assert resp.status_code == 200 and "PARLEY_STARTS_PER_USER" in resp.json()["text"]
    for _ in range(4):
        with httpx.Client(timeout=10) as fresh:
            _, samples = _parse(fresh.get(f"{url}/metrics").text)
        assert value(samples, "parley_runs_started_total", agent="s-form") == started
        assert value(samples, "parley_run_starts_refused_total", limit="user") == 1
