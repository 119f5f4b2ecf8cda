"""Who is away, until when, and who takes their questions, per workspace.

A record expires with its `until`, so a person is back on time with nothing to sweep. The index
lists a workspace's absences for App Home and `parley people list`. Questions already open stay
where they are. Only questions asked during an absence go to the delegate.

`stand_ins` maps the people a question is put to onto who answers it now. A delegate who is also
away is followed once more. A chain that comes back to someone on it stops before them, so it
never loops. Nobody is asked twice: a delegate already asked takes the absent person's place
once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from redis import Redis

from workers.store import keys
from workers.store.replies import as_text, reply, text_hash


@dataclass(frozen=True)
class Away:
    """`user` is away until `until` (epoch seconds), and `delegate` answers meanwhile."""

    user: str
    until: float
    delegate: str
    set_by: str = ""


HOPS = 2


@dataclass(frozen=True)
class StandIns:
    """Who is asked now (`people`), and whom each delegate answers for."""

    people: list[str]
    standing_in: dict[str, list[dict[str, float | str]]] = field(default_factory=dict)


class AwayStore:
    """Absences by workspace (`team`) and person.

    Team "" applies in every workspace, as `parley people` sets it.
    """

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    def set(self, team: str, user: str, until: float, delegate: str, *, by: str) -> Away:
        """Mark `user` away until `until`, their questions going to `delegate`."""
        key = keys.away(team, user)
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, mapping={"until": repr(until), "delegate": delegate, "set_by": by})
            pipe.expireat(key, int(until) + 1)
            pipe.zadd(keys.away_index(team), {user: until})
            pipe.zremrangebyscore(keys.away_index(team), "-inf", time.time())
            pipe.execute()
        return Away(user, until, delegate, by)

    def clear(self, team: str, user: str) -> bool:
        """Mark `user` back in `team`, or return False if they were not away there.

        An absence set for every workspace ("") applies in `team` too, so it ends as well: someone
        back is back. With `team` "", every workspace's absence of `user` ends.
        """
        teams = {team, ""} if team else set(self.teams())
        with self.redis.pipeline(transaction=True) as pipe:
            for each in teams:
                pipe.delete(keys.away(each, user))
                pipe.zrem(keys.away_index(each), user)
            done = pipe.execute()
        return any(done[0::2])

    def teams(self) -> list[str]:
        """Every workspace with an index of absences ("" for every workspace's)."""
        prefix = keys.away_index("")
        return sorted({"", *(as_text(k)[len(prefix) :] for k in self.redis.scan_iter(match=prefix + "*"))})

    def get(self, team: str, user: str, now: float | None = None) -> Away | None:
        """`user`'s absence in `team` or in every workspace (""), if on at `now`."""
        found = self._get(team, user, now)
        return found if found is not None or not team else self._get("", user, now)

    def _get(self, team: str, user: str, now: float | None) -> Away | None:
        raw = reply(self.redis.hgetall(keys.away(team, user)))
        fields = text_hash(raw)
        if not fields.get("until"):
            return None
        until = float(fields["until"])
        if until <= (time.time() if now is None else now):
            return None
        return Away(user, until, fields.get("delegate", ""), fields.get("set_by", ""))

    def stand_ins(self, team: str, people: list[str], now: float | None = None) -> StandIns:
        """`people` with each absent person replaced by their delegate, each person once.

        Nobody away is the usual case: one `EXISTS` over every absence key that could apply
        says so, where reading each person's absences took one or two commands a person."""
        now = time.time() if now is None else now
        teams = [team, ""] if team else [""]
        if not people or not self.redis.exists(*(keys.away(t, p) for p in people for t in teams)):
            return StandIns(list(dict.fromkeys(people)), {})
        asked: list[str] = []
        standing_in: dict[str, list[dict[str, float | str]]] = {}
        for person in people:
            who, chain, first = person, [person], None
            for _ in range(HOPS):
                absence = self.get(team, who, now)
                if absence is None or not absence.delegate or absence.delegate in chain:
                    break
                first = first or absence
                who = absence.delegate
                chain.append(who)
            if first is not None:
                standing_in.setdefault(who, []).append({"user": person, "until": first.until})
            if who not in asked:
                asked.append(who)
        return StandIns(asked, standing_in)

    def listed_everywhere(self, now: float | None = None) -> list[tuple[str, Away]]:
        """Everyone away at `now` in each workspace ("" for every workspace), by workspace."""
        return [(team, a) for team in self.teams() for a in self.listed(team, now)]

    def listed(self, team: str, now: float | None = None) -> list[Away]:
        """Everyone of `team` away at `now`, soonest back first."""
        now = time.time() if now is None else now
        users = [as_text(u) for u in reply(self.redis.zrangebyscore(keys.away_index(team), now, "+inf"))]
        return [a for u in users if (a := self._get(team, u, now)) is not None]
