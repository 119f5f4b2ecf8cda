"""A process's own metrics server (`parley worker --metrics-port`, `serve --socket-mode --metrics-port`):
the paused-runs gauge read from the real Redis at scrape time, and a port already taken refused in one line."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from redis import Redis
from runtime_helpers import make_runtime, parked
from slack_stack import free_port

from parley.metrics_setup import serve_metrics
from workers.exceptions import ConfigError

pytestmark = pytest.mark.integration


def paused(url: str) -> float:
    text = httpx.get(url, timeout=5).text
    [family] = [f for f in text_string_to_metric_families(text) if f.name == "parley_runs_paused"]
    return family.samples[0].value


def test_the_paused_gauge_is_read_from_redis_at_each_scrape(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    port = free_port()
    serve_metrics(rt.store, "127.0.0.1", port)
    url = f"http://127.0.0.1:{port}/metrics"
    assert paused(url) == 0
    parked(rt, "t-ask")
    parked(rt, "t-ask")
    assert paused(url) == 2


def test_a_port_already_taken_is_refused_in_one_line(r: Redis, tmp_path: Path) -> None:
    rt = make_runtime(r, tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as refused:
            serve_metrics(rt.store, "127.0.0.1", port)
    assert str(refused.value).startswith(f"--metrics-port {port}: cannot listen on 127.0.0.1:{port} (")
