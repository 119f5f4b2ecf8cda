"""The people a question is put to, in Slack: user groups, direct messages, what the message says.

- **User groups.** An assignee may be a user group id (`S…`). The Slack host resolves it to its
  members when the question is asked. It uses `usergroups.users.list`, scope `usergroups:read`.
  The members are stored with the question, and any of them may answer. The message shows the
  group's handle (`<!subteam^S…>`).
- **Direct messages.** Some people get a DM with a link to the question (`chat.getPermalink`).
  They are the people asked, other than the run's starter. Also people added by an escalation,
  and a question's new assignee. The DM uses `conversations.open`, scope `im:write`. It goes
  once per person per question (`PeopleStore.first_notice`).
- **People gone.** Slack may refuse the DM because the person's account is deactivated or gone.
  Then nobody would know the question waits on them. So the host says so in the run's thread,
  once, naming the run's starter (`gone_note`).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.slack.mrkdwn import date_token, is_group_id, user_ref
from workers.exceptions import AgentError
from workers.interaction import QuestionInfo
from workers.logs import Log
from workers.runs import Notices

log = Log("parley.slack")
PERSON_GONE = frozenset({"user_not_found", "user_disabled"})
"""A DM's refusals saying the person's account is deactivated or deleted.

`account_inactive` is not one: Slack sends it for the bot's own token.
"""


class Told(Enum):
    """How a DM about a question went; only `SENT` is true."""

    SENT = "sent"
    NOT_SENT = "not sent"
    GONE = "gone"
    """Slack refused it: the person's account is deactivated or gone."""

    def __bool__(self) -> bool:
        return self is Told.SENT


def has_groups(ids: list[str]) -> bool:
    return any(is_group_id(i) for i in ids)


def resolve_groups(client: WebClient, ids: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """`ids` with each user group replaced by its members, and the groups' members.

    Members come in order, once each. A group Slack does not know fails the question, naming the
    group. So do a missing scope and a group with no members. Asking nobody would leave the run
    waiting for good.
    """
    people: list[str] = []
    groups: dict[str, list[str]] = {}
    for i in ids:
        if not is_group_id(i):
            people.append(i)
            continue
        if i not in groups:
            try:
                resp = client.usergroups_users_list(usergroup=i)
            except SlackApiError as exc:
                error = exc.response.get("error")
                raise AgentError(f"the user group {i} could not be read from Slack ({error})") from exc
            groups[i] = [str(u) for u in resp.get("users") or []]
            if not groups[i]:
                raise AgentError(f"the user group {i} has no members in Slack, so nobody could answer")
        people.extend(groups[i])
    return list(dict.fromkeys(people)), groups


def shown_assignees(interrupt: QuestionInfo) -> list[str]:
    """Who the message says is asked: user groups by handle, then everyone else."""
    asked = interrupt.claimed_from if interrupt.claimed_by else interrupt.assignees  # a claim is its own line
    members = {u for users in interrupt.groups.values() for u in users}
    groups = [g for g, users in interrupt.groups.items() if set(users) & set(asked)]
    return [*groups, *(u for u in asked if u not in members)]


def notes(interrupt: QuestionInfo) -> list[str]:
    """What changed who is asked since posting: an escalation, each reassignment."""
    lines: list[str] = []
    if interrupt.escalated_at:
        who = ", ".join(user_ref(u) for u in interrupt.escalate_to)
        lines.append(f":arrow_double_up: Escalated to {who}: unanswered after {waited(interrupt)}")
    for delegate, absent in interrupt.standing_in.items():
        for a in absent:
            until, absent_ref = date_token(float(a.get("until") or 0)), user_ref(str(a.get("user")))
            lines.append(f":palm_tree: {user_ref(delegate)} answers for {absent_ref}, who is away until {until}")
    if interrupt.claimed_by:
        lines.append(f":raising_hand: Claimed by {user_ref(interrupt.claimed_by)}: only they can answer it now")
    for h in interrupt.handoffs:
        whom = ", ".join(user_ref(str(u)) for u in h.get("from") or [])
        by = str(h.get("by", ""))
        lines.append(
            f":arrows_counterclockwise: {user_ref(by)} reassigned this"
            + (f" from {whom}" if whom and whom != user_ref(by) else "")
            + f" to {user_ref(str(h.get('to', '')))}, {date_token(float(h.get('at') or 0))}"
        )
    return lines


def waited(interrupt: QuestionInfo) -> str:
    """How long the question waited before escalating, or "" if not escalated."""
    if not interrupt.escalated_at:
        return ""
    return _duration(round(interrupt.escalated_at - interrupt.asked_at))


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def notify(
    client: WebClient,
    store: Notices,
    interrupt: QuestionInfo,
    user: str,
    text: str,
    *,
    message: dict[str, Any] | None = None,
) -> Told:
    """DM `user` `text` with a link to the question, unless told already.

    Bots are never told, since a group may hold one. A failed DM is logged and not retried. The
    question is in its thread either way. `Told.GONE` says the person can never be told.
    """
    msg = interrupt.message if message is None else message  # `message`: where it was posted, if just now
    if not msg.get("ts") or not user.startswith(("U", "W")):
        return Told.NOT_SENT
    if not store.first_notice(interrupt.id, user):
        return Told.NOT_SENT
    ctx = {"run_id": interrupt.run_id, "interrupt_id": interrupt.id, "user": user, "team": interrupt.team}
    try:
        link = client.chat_getPermalink(channel=msg["channel"], message_ts=msg["ts"]).get("permalink")
        dm = client.conversations_open(users=user)["channel"]["id"]
        body = f"{text} <{link}|Open the question>" if link else text
        client.chat_postMessage(channel=dm, text=body, unfurl_links=False, unfurl_media=False)
    except SlackApiError as exc:
        error = exc.response.get("error")
        log.warning("could not tell a person of a question", **ctx, error=error)
        return Told.GONE if error in PERSON_GONE else Told.NOT_SENT
    log.info("person told of a question", **ctx)
    return Told.SENT


def gone_note(interrupt: QuestionInfo, user: str, started_by: str) -> str:
    """The thread's note that `user` cannot be told of the question, naming the run's starter."""
    starter = f"{user_ref(started_by)}: " if started_by.startswith(("U", "W")) and started_by != user else ""
    until = " until it expires" if interrupt.request.expires_in else ""
    return (
        f":warning: {starter}{user_ref(user)} could not be told of the question above: Slack says their account"
        f" is deactivated or gone. Unless a Parley admin reassigns it (Reassign… on the question), it waits{until}."
    )
