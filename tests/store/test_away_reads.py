"""Who is away, as a question reads it: one command when nobody is, delegates when someone is.

Real Redis; `NotingRedis` notes each command the store sends.
"""

from __future__ import annotations

import time

import pytest
from noting_redis import NotingRedis
from redis import Redis

from workers.store.away import AwayStore

pytestmark = pytest.mark.integration

TEAM = "T0AWAY"


def test_nobody_away_is_one_command_for_everyone_asked(r: Redis) -> None:
    noted = NotingRedis(connection_pool=r.connection_pool)
    got = AwayStore(noted).stand_ins(TEAM, ["U1", "U2", "U1", "U3"])
    assert (got.people, got.standing_in) == (["U1", "U2", "U3"], {})
    assert [c[0] for c in noted.sent] == ["EXISTS"]
    assert len(noted.sent[0]) == 1 + 2 * 4  # each person's absence in the workspace and everywhere


def test_someone_away_here_or_everywhere_is_replaced_by_their_delegate(r: Redis) -> None:
    away, until = AwayStore(r), time.time() + 3600
    away.set(TEAM, "U1", until, "U9", by="U1")
    away.set("", "U2", until, "U8", by="U2")  # `parley people`: away in every workspace
    got = away.stand_ins(TEAM, ["U1", "U2", "U3"])
    assert got.people == ["U9", "U8", "U3"]
    assert set(got.standing_in) == {"U9", "U8"}


def test_an_absence_just_over_still_asks_the_person(r: Redis) -> None:
    away = AwayStore(r)
    away.set(TEAM, "U1", time.time() + 0.5, "U9", by="U1")  # its key outlives it by up to a second
    assert away.stand_ins(TEAM, ["U1"], now=time.time() + 1).people == ["U1"]
