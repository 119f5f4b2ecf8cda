"""`parley people away|back|list`: who is away, until when, and who answers for them.

It is an operator's way to do what a person does from App Home. Questions asked during an
absence go to the delegate. Questions already open stay where they are.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
import time

from parley.bootstrap import away_store, connect_redis
from parley.settings import Settings

USER_ID = re.compile(r"[UW][A-Z0-9]{2,20}")
LONGEST = 366 * 86400
"""The furthest ahead an absence may end: a year."""


def until_of(text: str, now: float | None = None) -> float:
    """A time from `2026-12-24`, `2026-12-24T17:00`, or a duration like `3d`.

    Times are UTC unless they say otherwise.
    """
    now = time.time() if now is None else now
    if m := re.fullmatch(r"(\d{1,9})([dhm])", text.strip()):
        return _bounded(now + int(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)], now)
    try:
        at = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date, a date and time, or a duration like 3d") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    return _bounded(at.timestamp(), now)


def _bounded(until: float, now: float) -> float:
    if until > now + LONGEST:
        raise argparse.ArgumentTypeError("an absence ends within a year: give an earlier --until")
    return until


def people_command(settings: Settings, args: argparse.Namespace) -> int:
    store = away_store(connect_redis(settings))
    team = args.team or ""
    if args.people_command == "list":  # without --team: every workspace's, each named
        found = [(team, a) for a in store.listed(team)] if team else store.listed_everywhere()
        for where, a in found:
            back = dt.datetime.fromtimestamp(a.until, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
            place = "" if team else f"  ({f'workspace {where}' if where else 'every workspace'})"
            print(f"{a.user}  away until {back}  questions go to {a.delegate}{place}")
        if not found:
            print("nobody is away")
        return 0
    for user in [args.user, *([args.delegate] if args.people_command == "away" else [])]:
        if not USER_ID.fullmatch(user):
            print(f"parley people: {user!r} is not a Slack user id (U… or W…)", file=sys.stderr)
            return 2
    if args.people_command == "back":
        was = store.clear(team, args.user)
        print(f"{args.user} is back" if was else f"{args.user} was not away")
        return 0
    if args.delegate == args.user:
        print("parley people away: a person cannot be their own delegate", file=sys.stderr)
        return 2
    if args.until <= time.time():
        print("parley people away: --until is in the past", file=sys.stderr)
        return 2
    store.set(team, args.user, args.until, args.delegate, by="cli")
    back = dt.datetime.fromtimestamp(args.until, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{args.user} is away until {back}; new questions go to {args.delegate}")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    people = sub.add_parser("people", help="who is away, and who answers for them")
    psub = people.add_subparsers(dest="people_command")
    away = psub.add_parser("away", help="send a person's new questions to a delegate until a time")
    away.add_argument("user", help="the Slack user id of the person away (U…)")
    away.add_argument("--until", required=True, type=until_of, help="2026-12-24, 2026-12-24T17:00 or a duration (3d)")
    away.add_argument("--delegate", required=True, help="the Slack user id who answers meanwhile (U…)")
    back = psub.add_parser("back", help="end a person's absence now")
    back.add_argument("user")
    psub.add_parser("list", help="everyone away now")
    for each in psub.choices.values():
        each.add_argument(
            "--team", default=None, metavar="T…", help="one workspace (default: every workspace, each named by list)"
        )
    people.set_defaults(people_commands=list(psub.choices))
