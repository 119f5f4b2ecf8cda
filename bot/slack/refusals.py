"""Telling a person why their answer was refused, in Slack's words.

Every surface gets an `AnswerOutcome` from acceptance and words a refusal here. Surfaces are
Submit, a one-click choice, the form, a typed reply in the thread. So the same reason reads the
same everywhere. An accepted answer needs no words, as the resumed run shows it on the question.
"""

from __future__ import annotations

import re

from slack_sdk import WebClient

from bot.slack.mrkdwn import clip, cut_escaped, date_token, escape, user_ref
from workers.runs import AnswerOutcome, Refusal, RefusalReason

WRONG_WORKSPACE = "This question was asked in another Slack workspace, so it can't be answered from here."
NO_LONGER_NEEDED = "This question is no longer needed: the run went on without it, so your answer was not recorded."
UNCONFIRMED = (
    ":warning: Parley could not confirm that your answer is stored safely. Please submit it again;"
    " the same answer is taken only once."
)
SEVERAL_FIELDS = (
    "This question has several fields: use Submit or Answer in a form on the question."
    " Your reply was not taken as an answer."
)
ONE_FIELD_DETAIL = "one field"
"""A `SEVERAL_FIELDS` refusal's `message` when the question has a single field a reply cannot answer."""
ONE_FIELD = (
    "A typed reply cannot answer this question's field: use Submit or Answer in a form on the question."
    " Your reply was not taken as an answer."
)
_CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{2,20}$")
LABEL_MAX = 150
TEXT_MAX = 4000


def _problem_line(label: str | None, problem: str) -> str:
    """One refused item, named by its label ("Describe the bug"), never its id."""
    return f"• *{clip(label, LABEL_MAX)}*: {escape(problem)}" if label else f"• {escape(problem)}"


def wrong_place(channel: str) -> str:
    """An answer given away from the question's message: where the question is, as a link."""
    where = f"in <#{channel}>" if _CHANNEL_ID.fullmatch(channel) else "in another conversation"
    return f"This question was asked {where}; it can only be answered on its own message there."


def refusal_text(outcome: AnswerOutcome) -> str:
    """What the person reads when an answer is refused: exactly why."""
    d = outcome.refusal or Refusal(RefusalReason.UNKNOWN)
    match d.reason:
        case RefusalReason.INVALID:
            lines = [_problem_line(d.labels.get(k), v) for k, v in d.errors.items()]
            return cut_escaped(":warning: Your answer was not accepted:\n" + "\n".join(lines), TEXT_MAX)
        case RefusalReason.ANSWERED:
            when = f", {date_token(d.at)}" if d.at else ""
            return f"This question was already answered by {user_ref(d.by)}{when}."
        case RefusalReason.NOT_ALLOWED:
            who = ", ".join(user_ref(u) for u in d.assignees)
            return f"This question is not yours to answer; it is waiting on {who}."
        case RefusalReason.CANCELLED:
            by = d.by
            return "This question was cancelled" + (f" by {user_ref(by)}." if by.startswith(("U", "W")) else ".")
        case RefusalReason.EXPIRED:
            return "This question expired before it was answered."
        case RefusalReason.UNAVAILABLE:
            return ":warning: Parley could not save your answer just now. Nothing was recorded; please submit again."
        case RefusalReason.NOT_NEEDED:
            return NO_LONGER_NEEDED
        case RefusalReason.UNCONFIRMED:
            return UNCONFIRMED
        case RefusalReason.NOT_OPEN:
            return "This question is not waiting for an answer right now; try again in a moment."
        case RefusalReason.AMBIGUOUS:
            return cut_escaped(f"I couldn't tell which option you meant: {escape(d.message)}", TEXT_MAX)
        case RefusalReason.FORM_ONLY:
            return (
                ":lock: This question asks for a secret, so it is answered only in its form: click "
                "*Answer in a form* on the question. Your reply was not taken as an answer; "
                "if it holds the secret, delete it."
            )
        case RefusalReason.SEVERAL_FIELDS:
            return ONE_FIELD if d.message == ONE_FIELD_DETAIL else SEVERAL_FIELDS
        case RefusalReason.WRONG_TEAM:
            return WRONG_WORKSPACE
        case RefusalReason.WRONG_PLACE:
            return wrong_place(d.channel)
        case _:  # UNKNOWN, NOT_DUE
            return "This question no longer exists."


def tell_refusal(client: WebClient, outcome: AnswerOutcome, channel: str | None, thread_ts: str | None) -> None:
    """After the ack: tell the person exactly why their answer was refused, privately.

    An accepted answer needs nothing here: the resumed run shows it on the question. The worker
    locks the message. So the ack path makes no Web API call at all.
    """
    if outcome.ok or not channel:
        return
    client.chat_postEphemeral(channel=channel, user=outcome.user, thread_ts=thread_ts, text=refusal_text(outcome))
