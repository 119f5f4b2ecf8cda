"""Away, on the App Home tab: the person's own status, and the form that sets it.

parley_away_open     "Set away…" on Home: opens the form
parley_away_back     "I'm back" on Home: ends the absence now
parley_away          the form's callback_id: until when, and who answers meanwhile
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    DateTimePickerElement,
    InputBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
    UserSelectElement,
)
from slack_sdk.models.views import View

from bot.slack.mrkdwn import date_token, user_ref
from workers.runs import Away

AWAY_OPEN_ACTION_ID = "parley_away_open"
AWAY_BACK_ACTION_ID = "parley_away_back"
AWAY_CALLBACK_ID = "parley_away"
UNTIL_BLOCK, UNTIL_ACTION = "away_until", "until"
DELEGATE_BLOCK, DELEGATE_ACTION = "away_delegate", "delegate"


def away_blocks(away: Away | None) -> list[Block]:
    """The person's Home line: away until when and to whom, with "I'm back".

    Otherwise it offers "Set away…".
    """
    if away is None:
        text = "Going away? New questions for you can go to someone else until you are back."
        button = ButtonElement(text="Set away…", action_id=AWAY_OPEN_ACTION_ID)
    else:
        text = (
            f":palm_tree: You are away until {date_token(away.until)}; "
            f"new questions for you go to {user_ref(away.delegate)}."
        )
        button = ButtonElement(text="I'm back", action_id=AWAY_BACK_ACTION_ID)
    return [
        SectionBlock(block_id="home|away", text=MarkdownTextObject(text=text)),
        ActionsBlock(block_id="home|away_actions", elements=[button]),
    ]


def away_form(now: float) -> dict[str, Any]:
    """The form: until when (date and time), and who answers new questions meanwhile."""
    return View(
        type="modal",
        callback_id=AWAY_CALLBACK_ID,
        title="Away",
        submit="Save",
        close="Cancel",
        blocks=[
            InputBlock(
                block_id=UNTIL_BLOCK,
                label="Away until",
                element=DateTimePickerElement(action_id=UNTIL_ACTION, initial_date_time=int(now) + 7 * 86400),
            ),
            InputBlock(
                block_id=DELEGATE_BLOCK,
                label="Send my new questions to",
                element=UserSelectElement(action_id=DELEGATE_ACTION, placeholder=PlainTextObject(text="Someone")),
            ),
        ],
    ).to_dict()


def form_values(view: dict[str, Any]) -> tuple[float | None, str]:
    """The form's submitted (until, delegate), with None and "" for missing fields."""
    values = (view.get("state") or {}).get("values") or {}
    until = (values.get(UNTIL_BLOCK) or {}).get(UNTIL_ACTION, {}).get("selected_date_time")
    delegate = (values.get(DELEGATE_BLOCK) or {}).get(DELEGATE_ACTION, {}).get("selected_user") or ""
    return (float(until) if until is not None else None), str(delegate)
