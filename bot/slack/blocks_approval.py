"""Block Kit for an approval (`run.approve`): the action, its arguments, Approve / Edit… / Reject.

Id scheme, beside `blocks_question`'s:

    qv|{iid}|{v}           the arguments, one section field each (long values cut; the form shows them whole)
    qa|{iid}|{v}           "parley_approve", "parley_approve_standing" (when a standing approval is offered),
                           "parley_open_form" (Edit…, when any argument is editable), "parley_reject";
                           each button's value is iid
    f|{iid}|{item_id}      one editable argument in the "parley_form" modal, as for any question
    f|{iid}|_reason        the reason in the "parley_reject_form" modal (private_metadata as for the form)
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from bot.slack.limits import SECTION_MAX
from bot.slack.mrkdwn import clip, date_token, escape, user_ref
from workers.interaction import Answer, Request, answers_to_values
from workers.interaction.approval import REASON_ID, decision_of
from workers.interaction.context import show_value

APPROVE_ACTION_ID = "parley_approve"
APPROVE_STANDING_ACTION_ID = "parley_approve_standing"
REJECT_ACTION_ID = "parley_reject"
REJECT_CALLBACK_ID = "parley_reject_form"
VALUE_SHOWN = 200
"""The characters of one argument's value the message shows; the form shows it whole."""
FIELD_MAX = 2000
FIELDS_PER_SECTION = 10


def _arg_sections(args: dict[str, Any], block_id: str | None, *, room: int = VALUE_SHOWN) -> list[Block]:
    fields = [f"*{clip(name, 100)}*\n{clip(show_value(value), room)}" for name, value in args.items()]
    fields = [f[:FIELD_MAX] for f in fields] or ["_no arguments_"]
    chunks = [fields[n : n + FIELDS_PER_SECTION] for n in range(0, len(fields), FIELDS_PER_SECTION)]
    return [
        SectionBlock(
            block_id=f"{block_id}|{n}" if block_id else None,
            fields=[MarkdownTextObject(text=f) for f in chunk],
        )
        for n, chunk in enumerate(chunks)
    ]


def approval_blocks(request: Request, iid: str, version: int, head: list[Block], reassign: Block) -> list[Block]:
    """The approval's message below its head: arguments, then Approve / Edit… / Reject."""
    approval = request.approval
    assert approval is not None
    buttons = [ButtonElement(text="Approve", action_id=APPROVE_ACTION_ID, value=iid, style="primary")]
    if approval.standing:
        buttons.append(ButtonElement(text=approval.standing, action_id=APPROVE_STANDING_ACTION_ID, value=iid))
    if approval.editable:
        buttons.append(ButtonElement(text="Edit…", action_id="parley_open_form", value=iid))
    buttons.append(ButtonElement(text="Reject", action_id=REJECT_ACTION_ID, value=iid, style="danger"))
    return [
        *head,
        *_arg_sections(approval.args, f"qv|{iid}|{version}"),
        ActionsBlock(block_id=f"qa|{iid}|{version}", elements=buttons),
        reassign,
    ]


def fixed_args_blocks(request: Request) -> list[Block]:
    """In the edit form: the arguments that cannot be edited, shown whole."""
    approval = request.approval
    assert approval is not None
    fixed = {k: v for k, v in approval.args.items() if k not in approval.editable}
    return _arg_sections(fixed, None, room=FIELD_MAX - 120) if fixed else []


def reject_view(request: Request, iid: str, *, channel: str | None = None) -> dict[str, Any]:
    """The Reject modal: an optional reason, then Reject."""
    action = request.approval.action if request.approval else request.reason
    return View(
        type="modal",
        callback_id=REJECT_CALLBACK_ID,
        private_metadata=f"{iid}|{channel}" if channel else iid,
        title=PlainTextObject(text="Reject"),
        submit=PlainTextObject(text="Reject"),
        close=PlainTextObject(text="Cancel"),
        blocks=[
            SectionBlock(text=MarkdownTextObject(text=f"Reject *{clip(action, 2000)}*?")),
            InputBlock(
                block_id=f"f|{iid}|{REASON_ID}",
                label=PlainTextObject(text="Reason"),
                element=PlainTextInputElement(action_id="answer", multiline=True, max_length=3000),
                optional=True,
            ),
        ],
    ).to_dict()


def approval_answered_blocks(
    request: Request, answers: list[Answer], *, answered_by: str, answered_at: float
) -> list[Block]:
    """The locked approval: decision, decider, approved args with edits shown, reason."""
    decision = decision_of(request, answers_to_values(request, answers), answered_by)
    action = request.approval.action if request.approval else request.reason
    verdict = ":white_check_mark: Approved" if decision.approved else ":x: Rejected"
    if decision.standing and request.approval and request.approval.standing:
        verdict += f" ({escape(request.approval.standing)})"
    edited = {c[0]: c for c in decision.changes}
    shown = {
        name: (f"{show_value(edited[name][1])} → {show_value(value)} (edited)" if name in edited else value)
        for name, value in decision.args.items()
    }
    out: list[Block] = [SectionBlock(text=MarkdownTextObject(text=f"*{clip(action, 1000)}*\n{verdict}"))]
    out += _arg_sections(shown, None, room=FIELD_MAX - 120)
    if decision.reason:
        text = f"*Reason*\n{clip(decision.reason, SECTION_MAX - 20)}"
        out.append(SectionBlock(text=MarkdownTextObject(text=text)))
    who = f"{'Approved' if decision.approved else 'Rejected'} by {user_ref(answered_by)}, {date_token(answered_at)}"
    if decision.edited:
        who += f"; edited by {user_ref(answered_by)}: {escape(', '.join(edited))}"
    out.append(ContextBlock(elements=[MarkdownTextObject(text=who)]))
    return out
