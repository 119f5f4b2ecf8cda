"""The webhook delivery limits in Redis: in-flight caps per token and per host, and each host's circuit breaker."""

from __future__ import annotations

import time

import pytest
from noting_redis import NotingRedis
from redis import Redis

from workers.store import keys
from workers.store.webhook_limits import Circuit, Circuits, Gate, InFlight, open_gate

pytestmark = pytest.mark.integration


def test_a_token_and_a_host_each_have_a_cap_of_attempts_in_flight(r: Redis) -> None:
    slots = InFlight(r, per_token=2, per_host=2)
    assert slots.acquire("job-1", "ci", "a.example", hold=30) is None
    assert slots.acquire("job-2", "ci", "b.example", hold=30) is None
    assert slots.acquire("job-3", "ci", "c.example", hold=30) == "token"  # ci has two in flight
    assert slots.acquire("job-4", "other", "a.example", hold=30) is None
    assert slots.acquire("job-5", "third", "a.example", hold=30) == "host"  # a.example has two
    assert slots.acquire("job-1", "ci", "a.example", hold=30) is None  # a holder asking again keeps its slot
    slots.release("job-1", "ci", "a.example")
    assert slots.acquire("job-5", "third", "a.example", hold=30) is None
    assert slots.acquire("job-3", "ci", "c.example", hold=30) is None


def test_a_slot_whose_holder_died_frees_itself(r: Redis) -> None:
    slots = InFlight(r, per_token=1, per_host=1)
    assert slots.acquire("job-1", "ci", "a.example", hold=0.2) is None
    assert slots.acquire("job-2", "ci", "a.example", hold=0.2) == "token"
    time.sleep(0.3)  # the holder never released it
    assert slots.acquire("job-2", "ci", "a.example", hold=30) is None


def test_a_host_that_keeps_timing_out_opens_its_circuit_until_it_answers(r: Redis) -> None:
    circuits = Circuits(r, threshold=3, cooldown=60, max_cooldown=100)
    now = 1_000_000.0
    assert circuits.timed_out("slow.example", now).state == "closed"
    assert circuits.timed_out("slow.example", now).state == "closed"
    opened = circuits.timed_out("slow.example", now)
    assert (opened.state, opened.open_until) == ("open", now + 60)
    assert circuits.get("slow.example", now + 59).state == "open"
    assert circuits.get("other.example", now).state == "closed"  # per host
    assert circuits.get("slow.example", now + 61).state == "half_open"  # the next attempt is a trial
    again = circuits.timed_out("slow.example", now + 61)
    assert (again.state, again.open_until) == ("open", now + 61 + 100)  # 120 s, capped at 100
    assert circuits.open_count(now + 61) == 1
    assert circuits.answered("slow.example").state == "closed"
    assert circuits.get("slow.example", now + 62).state == "closed"
    assert circuits.open_count(now + 62) == 0


def test_the_gate_reads_the_circuit_and_token_and_takes_the_slot_in_one_round_trip(r: Redis) -> None:
    noted = NotingRedis(connection_pool=r.connection_pool)
    r.hset(keys.api_tokens(), "ci", "hash-of-ci")
    circuits, slots = Circuits(noted, threshold=1), InFlight(noted, per_token=1, per_host=5)
    gate = open_gate(circuits, slots, "h:443", "ci", ("job-1", "owner-1", 30.0))
    assert len(noted.trips) == 1
    assert gate == Gate(Circuit("closed"), "hash-of-ci", None)
    assert open_gate(circuits, slots, "h:443", "ci", ("job-2", "owner-1", 30.0)).full == "token"

    circuits.timed_out("h:443")  # the threshold: its circuit opens
    shut = open_gate(circuits, slots, "h:443", "nobody", ("job-3", "owner-2", 30.0))
    assert shut.circuit.state == "open" and shut.token_hash is None
    assert r.zscore(keys.webhook_in_flight("token", "owner-2"), "job-3") is None  # no attempt: no slot held
