"""`bench.waits`: a worker's samples split into running and waiting, each wait charged to its site."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the bench is run from the repository root; it is not an installed package

from bench.waits import classify, frames, summarize_waits  # noqa: E402

pytestmark = pytest.mark.unit

WORKER = 'process 7:"parley worker"'
MAIN = f"{WORKER};thread (7): MainThread;run_worker (parley/worker.py:122);BaseWorker.work (rq/worker/base.py:600)"
JOB = f"{MAIN};BaseWorker.perform_job (rq/worker/base.py:1400);execute (workers/runtime/execute.py:45)"
HIREDIS = "_HiredisParser.read_from_socket (redis/_parsers/hiredis.py:85)"
REDIS_CALL = (
    "Redis.execute_command (redis/client.py:621);Redis._execute_command (redis/client.py:642);"
    "Retry.call_with_retry (redis/retry.py:62);Redis.parse_response (redis/client.py:660);"
    f"AbstractConnection.read_response (redis/connection.py:640);{HIREDIS}"
)
WEB_CALL = (
    "SlackHost._post (bot/slack/host.py:113);WebClient.chat_postMessage (slack_sdk/web/client.py:2900);"
    "BaseClient.api_call (slack_sdk/web/base_client.py:150);"
    "KeepAliveWebClient._perform_urllib_http_request_internal (bot/slack/transport.py:120);"
    "_Connection.receive (bot/slack/transport.py:80)"
)


def test_a_redis_reply_waited_for_is_charged_to_the_commands_caller() -> None:
    dequeue = f"{MAIN};BaseWorker.dequeue_job_and_maintain_ttl (rq/worker/base.py:900);Queue.lmove (rq/queue.py:1300);"
    assert classify(frames(dequeue + REDIS_CALL)) == ("waiting for Redis", "Queue.lmove (rq/queue.py)")
    claim = f"{JOB};RunStore.claim (workers/store/runs.py:200);Script.__call__ (redis/commands/core.py:5900);"
    assert classify(frames(claim + REDIS_CALL)) == ("waiting for Redis", "RunStore.claim (workers/store/runs.py)")


def test_a_web_api_reply_waited_for_is_charged_to_its_method() -> None:
    assert classify(frames(f"{JOB};{WEB_CALL}")) == ("waiting for the Web API", "WebClient.chat_postMessage")
    urllib = WEB_CALL.rsplit(";", 2)[0] + ";HTTPResponse.begin (http/client.py:300);SocketIO.readinto (socket.py:706)"
    assert classify(frames(f"{JOB};{urllib}")) == ("waiting for the Web API", "WebClient.chat_postMessage")


def test_work_and_socket_writes_are_running() -> None:
    parse = f"{JOB};RunRecord.from_hash (workers/store/records.py:90);BaseModel.model_validate (pydantic/main.py:600)"
    assert classify(frames(parse)) == ("running", "")
    send = f"{JOB};Redis.execute_command (redis/client.py:621);"
    send += "AbstractConnection.send_packed_command (redis/connection.py:580)"
    assert classify(frames(send)) == ("running", "")
    decode = f"{JOB};{WEB_CALL.rsplit(';', 1)[0]};loads (json/__init__.py:346)"
    assert classify(frames(decode)) == ("running", "")


def test_the_summary_counts_the_work_loop_only(tmp_path: Path) -> None:
    raw = tmp_path / "cycle.raw"
    dequeue = f"{MAIN};Queue.lmove (rq/queue.py:1300);{REDIS_CALL}"
    raw.write_text(
        "\n".join(
            [
                f"{dequeue} 30",
                f"{JOB};{WEB_CALL} 20",
                f"{JOB};RunRecord.from_hash (workers/store/records.py:90) 50",
                f"{WORKER};thread (9): parley-leases;_renewer (workers/runtime/lease.py:40) 400",
                f"{MAIN};BaseWorker._start_scheduler (rq/worker/base.py:939);RQScheduler.start (rq/scheduler.py:338);"
                f'BaseProcess.start (multiprocessing/process.py:121);process 8:"parley worker";thread (8): MainThread;'
                "RQScheduler.work (rq/scheduler.py:355) 900",
            ]
        )
    )
    text = summarize_waits(raw, "title")
    assert "100 samples of the worker's main thread" in text
    assert "  50.0%  running" in text
    assert "  30.0%  waiting for Redis" in text
    assert "  20.0%  waiting for the Web API" in text
    assert "30.0%  waiting for Redis: Queue.lmove (rq/queue.py)" in text
    assert "20.0%  waiting for the Web API: WebClient.chat_postMessage" in text


def test_the_time_ready_for_a_core_is_running_less_the_cpu_time(tmp_path: Path) -> None:
    raw = tmp_path / "cycle.raw"
    raw.write_text(f"{JOB};RunRecord.from_hash (workers/store/records.py:90) 80\n{JOB};{WEB_CALL} 20\n")
    text = summarize_waits(raw, "title", on_cpu=0.5)
    assert "of which on a CPU 50.0%" in text
    assert "ready but waiting for a core 30.0%" in text
    assert "on a CPU" not in summarize_waits(raw, "title")
