"""`release`: cut a release once reviewers each signed off, then publish it locally.

An example is `/parley release api v2.0.1 U0ALICE U0CAROL U0DAN`. Reviewers are user ids or
`<@U…>` mentions. It puts one sign-off question to each reviewer separately (`run.ask_each`).
Each answers for themselves on the same message. The message shows who has signed off so far,
and how. Two sign-offs are enough, or everyone's when fewer were named.

A single "Block" vetoes the release. The run goes on at the quorum, but refuses to publish if
anyone blocked. That is the veto pattern in the README. A published release is written to
`releases/<service>` in the data directory. The `deploy` agent reads a service's current version
there. It is also appended to `releases.jsonl`.
"""

from __future__ import annotations

import fcntl
import json
import re
import time
from pathlib import Path
from typing import Any

from workers import AgentRun, agent
from workers.interaction import Item, ItemType, Option, Request

QUORUM = 2
_REVIEWER = re.compile(r"(?:<@)?([UW][A-Z0-9]{2,20})(?:\|[^>]*)?>?")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def release_plan(text: str) -> tuple[str, str, list[str]]:
    """`service version reviewer...` → (service, version, reviewer ids).

    A ValueError names what is wrong.
    """
    words = text.split()
    if len(words) < 2 or not _NAME.fullmatch(words[0]) or not _NAME.fullmatch(words[1]):
        raise ValueError("usage: release <service> <version> [reviewer user id ...], e.g. release api v2.0.1 U0ALICE")
    reviewers = []
    for word in words[2:]:
        found = _REVIEWER.fullmatch(word)
        if found is None:
            raise ValueError(f"{word!r} is not a reviewer's user id (like U0ALICE) or mention")
        reviewers.append(found.group(1))
    return words[0], words[1], list(dict.fromkeys(reviewers))


def signoff_request(service: str, version: str, reviewers: list[str]) -> Request:
    return Request(
        reason=f"Sign off on releasing {service} {version}?",
        items=[
            Item(
                id="decision",
                text="Your sign-off",
                type=ItemType.SELECT,
                options=[Option(value="ship", label="Ship it"), Option(value="block", label="Block")],
            ),
            Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False),
        ],
        assignees=reviewers,
        show_answers=True,
    )


def publish(data_dir: Path, service: str, version: str, entry: dict[str, Any]) -> dict[str, Any]:
    """Make `version` the service's current release and log it.

    A lock shared with other workers guards it.
    """
    releases = data_dir / "releases"
    releases.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "releases.jsonl", "a", encoding="utf-8") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        (releases / service).write_text(version + "\n", encoding="utf-8")
        log.write(json.dumps({**entry, "at": time.time()}) + "\n")
    return entry


@agent(
    "release",
    description="Each reviewer signs off, then it publishes: `/parley release api v2.0.1 U0ALICE U0BOB`",
    usage="<service> <version> [reviewer ...]",
)
def release(run: AgentRun, text: str) -> str:
    try:
        service, version, reviewers = release_plan(text)
    except ValueError as exc:
        return str(exc)
    request = signoff_request(service, version, reviewers)
    named = len(request.assignees) or 1
    signoffs = run.ask_each(request, quorum=min(QUORUM, named), context={"service": service, "version": version})
    blocked = sorted(user for user, answers in signoffs.items() if answers["decision"] == "block")
    if blocked:  # the veto: one Block stops the release
        return f"Release of {service} {version} blocked by {_mentions(blocked)}."
    entry = {"service": service, "version": version, "signed_off_by": sorted(signoffs), "run_id": run.run_id}
    run.step("publish", lambda: publish(run.data_dir, service, version, entry))
    return f"Released {service} {version}, signed off by {_mentions(sorted(signoffs))}."


def _mentions(users: list[str]) -> str:
    """The reviewers as mentions (`<@U0ALICE>`): Slack shows their names, the terminal `@U0ALICE`."""
    return ", ".join(f"<@{user}>" for user in users)
