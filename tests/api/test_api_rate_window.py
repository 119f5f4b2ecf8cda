"""The API's rate limit holds over any span of the window's length, across a window's edge too."""

from __future__ import annotations

import threading

import pytest
import redis

from workers.store.questions import QuestionStore

pytestmark = pytest.mark.integration

LIMIT, WINDOW = 5, 2
START = 1001.0  # a fixed window of 2 s would have an edge at 1002.0, a second into the requests


def accepted_times(store: QuestionStore, times: list[float], bucket: str = "tok") -> list[float]:
    return [t for t in times if store.hit(bucket, LIMIT, WINDOW, now=t) == 0]


def test_requests_straddling_a_window_edge_never_exceed_the_limit_in_any_span(r: redis.Redis) -> None:
    store = QuestionStore(r)
    times = [START + 0.05 * n for n in range(120)]  # one request every 50 ms for 6 s
    passed = accepted_times(store, times)
    for t in passed:
        inside = [u for u in passed if t <= u < t + WINDOW]
        assert len(inside) <= LIMIT, f"{len(inside)} requests passed in the {WINDOW} s from {t}"
    # The limit is held, not tightened: five in each of the three spans.
    assert len(passed) == 3 * LIMIT
    assert passed[:LIMIT] == times[:LIMIT] and passed[LIMIT] == pytest.approx(START + WINDOW)


def test_a_refused_request_is_told_when_it_fits_and_fits_then(r: redis.Redis) -> None:
    store = QuestionStore(r)
    for n in range(LIMIT):
        assert store.hit("tok", LIMIT, WINDOW, now=START + 0.1 * n) == 0
    wait = store.hit("tok", LIMIT, WINDOW, now=START + 1.0)
    assert wait == pytest.approx(1.0)  # the first request leaves the window at START + 2
    assert store.hit("tok", LIMIT, WINDOW, now=START + 1.0 + wait - 0.01) > 0
    assert store.hit("tok", LIMIT, WINDOW, now=START + 1.0 + wait) == 0
    assert store.hit("other", LIMIT, WINDOW, now=START + 1.0) == 0  # each bucket is its own


def test_a_cost_counts_as_that_many_requests_and_a_refusal_takes_nothing(r: redis.Redis) -> None:
    store = QuestionStore(r)
    assert store.hit("fan", LIMIT, WINDOW, now=START, cost=3) == 0
    assert store.hit("fan", LIMIT, WINDOW, now=START + 0.5, cost=3) == pytest.approx(1.5)
    assert store.hit("fan", LIMIT, WINDOW, now=START + 0.5, cost=2) == 0  # the refused three took nothing
    assert store.hit("fan", LIMIT, WINDOW, now=START + 0.6) == pytest.approx(1.4)
    assert store.hit("fan", LIMIT, WINDOW, now=START, cost=LIMIT + 1) == WINDOW  # never fits


def test_over_reads_a_full_log_without_counting(r: redis.Redis) -> None:
    store = QuestionStore(r)
    for n in range(LIMIT - 1):
        store.hit("auth-failed:10.0.0.1", LIMIT, WINDOW, now=START + 0.1 * n)
    assert store.over("auth-failed:10.0.0.1", LIMIT, WINDOW, now=START + 1.0) == 0
    assert store.over("auth-failed:10.0.0.1", LIMIT, WINDOW, now=START + 1.0) == 0  # reading counts nothing
    store.hit("auth-failed:10.0.0.1", LIMIT, WINDOW, now=START + 1.0)
    assert store.over("auth-failed:10.0.0.1", LIMIT, WINDOW, now=START + 1.5) == pytest.approx(0.5)
    assert store.over("auth-failed:10.0.0.1", LIMIT, WINDOW, now=START + 2.0) == 0


def test_concurrent_requests_from_processes_sharing_redis_never_pass_more_than_the_limit(
    redis_url: str, r: redis.Redis
) -> None:
    """Eight clients of their own (as eight `parley serve` processes) spend one token at the same instant."""
    outcomes: list[float] = []
    lock = threading.Lock()

    def client() -> None:
        store = QuestionStore(redis.Redis.from_url(redis_url))
        for _ in range(LIMIT):
            wait = store.hit("shared", LIMIT, WINDOW, now=START)
            with lock:
                outcomes.append(wait)

    threads = [threading.Thread(target=client) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(outcomes) == 8 * LIMIT and outcomes.count(0) == LIMIT
