"""Block Kit for a question: the message people answer in a thread, and its form.

Each item's input is built in `bot.slack.blocks_inputs`, and the locked states (answered,
closed) in `bot.slack.blocks_locked`.

The bot routes on this id scheme, and `bot.slack.form_state.parse_block_id` reads it back. `iid`
is the interrupt's unguessable `token_urlsafe` id. `v` is the message version, bumped on every
re-render. Slack wants fresh block_ids each time a message is updated.

    q|{iid}|{v}|{item_id}  input block of one item; its element's action_id is "answer"
    qa|{iid}|{v}           actions block: "parley_submit" (value iid) and "parley_open_form" (value iid),
                           and for a declinable question "parley_decline" (value iid)
    qc|{iid}|{v}           fast-path actions block: one button per option, action_id
                           "parley_choose_{n}" (n = option index), value = the option's value; last,
                           for a declinable question, "parley_decline" (value iid)
    qh|{iid}|{v}|{n}       reason header/section number n
    qm|{iid}|{v}           "Asked of …" context
    qo|{iid}|{v}           "Asked by … through the API" (or MCP): a question's origin, above its text
    qn|{iid}|{v}           who was added or handed the question since it was asked (escalation, reassignment)
    qr|{iid}|{v}           "Reassign…": a users select, action_id "parley_reassign"
    fr|{iid}|{v}           the same "Reassign…" select in the modal
                           (neither where not `reassignable`: an `ask_each` question's people answer their own)
    qt|{iid}|{v}           fast-path question text
    qd|{iid}|{v}           what changed since an answer voided by changed facts (`blocks_context`)
    qx|{iid}|{v}           "You are deciding on": the facts the answer is bound to (`blocks_context`)
    f|{iid}|{item_id}      input block of one item in the "parley_form" modal (private_metadata = iid,
                           or "{iid}|{channel}" when opened from the question's message in that channel)
    fh|{iid}|{v}|{n}       reason section number n in the modal

Everything is built from slack_sdk model objects, so their limit validators run. It is then
checked against the message-wide limits slack_sdk misses (`bot.slack.limits`). Agent text
reaches mrkdwn only escaped. `plain_text` fields (header, labels, options) take it raw, since
Slack does not parse them. Locked messages (answered or closed) carry no block_ids, and Slack
assigns fresh ones. Runs of blank lines in agent text fold into one (`fold_blank_lines`). A
question asked through the API or MCP opens with who asked it (`asked_by_line`). So nothing the
agent wrote can pass for a line of Parley's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
    UserSelectElement,
)
from slack_sdk.models.views import View

from bot.slack import limits
from bot.slack.blocks_approval import approval_blocks, fixed_args_blocks
from bot.slack.blocks_context import context_blocks, what_changed
from bot.slack.blocks_inputs import by_option_text, input_block, is_external, largest_fitting
from bot.slack.limits import HEADER_MAX, LABEL_MAX, OPTION_DESCRIPTION_MAX, SECTION_MAX, utf16_len
from bot.slack.mrkdwn import (
    assignee_ref,
    clip,
    cut_escaped,
    escape,
    fold_blank_lines,
    origin_ref,
    split_escaped,
)
from workers.interaction import Context, ContextChange
from workers.interaction.models import ItemType, Request

EXTERNAL_SELECT_THRESHOLD = 100
"""Selects with more options than this load them from the options URL (external_select)."""
FAST_PATH_MAX_OPTIONS = 5
QUESTION_TEXT_BUDGET = 10_000
"""Text a question message aims to stay under, leaving headroom below Slack's ~12,000."""
REASON_MAX = 6000
"""The escaped reason a message shows, split into sections of at most `SECTION_MAX`."""
MAX_ASSIGNEES_SHOWN = 10
FALLBACK_MAX = 4000
"""Slack's recommended ceiling for a message's top-level `text`, escaped."""

SUBMIT_ACTION_ID = "parley_submit"
OPEN_FORM_ACTION_ID = "parley_open_form"
CHOOSE_ACTION_PREFIX = "parley_choose_"
DECLINE_ACTION_ID = "parley_decline"
REASSIGN_ACTION_ID = "parley_reassign"
CLAIM_ACTION_ID = "parley_claim"
RELEASE_ACTION_ID = "parley_release"
FORM_CALLBACK_ID = "parley_form"

_IID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
FORM_ONLY_NOTE = ":lock: This question asks for a secret, so it is answered only in its form: click *Answer in a form*."


def check_ids(iid: str, version: int) -> None:
    """Refuse an interrupt id or message version that cannot go into a block id."""
    if not isinstance(iid, str) or not _IID.fullmatch(iid):
        raise ValueError(f"interrupt id {iid!r} is not a url-safe token")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ValueError(f"message version must be a non-negative int, got {version!r}")


def to_dicts(blocks: list[Block]) -> list[dict[str, Any]]:
    """Blocks as the JSON Slack takes."""
    return [b.to_dict() for b in blocks]


def _reason_blocks(reason: str, prefix: str | None, id_base: str | None, *, allow_header: bool) -> list[Block]:
    """A plain_text header for a short one-line reason, else escaped mrkdwn sections.

    Sections hold at most 3000 characters. Reasons with `<` or `>` always go to an escaped section.
    So nothing like a mention or link is ever sent unescaped, whatever a surface's parsing rules.
    """
    reason = fold_blank_lines(reason)
    raw = f"{prefix} {reason}" if prefix else reason
    ids = (lambda n: f"{id_base}|{n}") if id_base else (lambda n: None)
    if allow_header and utf16_len(raw) <= HEADER_MAX and not set(raw) & {"\n", "<", ">"}:
        return [HeaderBlock(block_id=ids(0), text=PlainTextObject(text=raw))]
    body = cut_escaped(escape(reason), REASON_MAX)
    if prefix:
        body = f"*{clip(prefix, 100)}* {body}"
    chunks = [c for c in split_escaped(body, SECTION_MAX) if c.strip()] or ["…"]
    return [SectionBlock(block_id=ids(n), text=MarkdownTextObject(text=c)) for n, c in enumerate(chunks)]


def assignee_line(assignees: list[str]) -> str:
    """The "Asked of …" line: the first ten people or groups asked, and how many more."""
    if not assignees:
        return "Anyone in this channel can answer"
    shown = ", ".join(assignee_ref(a) for a in assignees[:MAX_ASSIGNEES_SHOWN])
    more = len(assignees) - MAX_ASSIGNEES_SHOWN
    return f"Asked of {shown}" + (f" and {more} more" if more > 0 else "")


VIA = {"api": "the API", "mcp": "MCP"}
"""How a question came to be asked, as its "Asked by" line says it."""


def asked_by_line(origin: str, via: str = "api") -> str:
    """The line above an API or MCP question: "Asked by *ci-bot* through the API"."""
    return f"Asked by *{origin_ref(origin)}* through {VIA.get(via, VIA['api'])}"


def origin_block(asked_by: str, block_id: str | None = None) -> dict[str, Any]:
    """The `asked_by_line` as the context block opening a question's message and locked states."""
    return ContextBlock(block_id=block_id, elements=[MarkdownTextObject(text=asked_by)]).to_dict()


def reassign_block(block_id: str, claim: str | None = None, iid: str = "") -> ActionsBlock:
    """The "Reassign…" users select, with "Claim" or "Release" as `claim` says."""
    select = UserSelectElement(action_id=REASSIGN_ACTION_ID, placeholder=PlainTextObject(text="Reassign…"))
    extra = []
    if claim == "claim":
        extra = [ButtonElement(text="Claim", action_id=CLAIM_ACTION_ID, value=iid)]
    elif claim == "release":
        extra = [ButtonElement(text="Release", action_id=RELEASE_ACTION_ID, value=iid)]
    return ActionsBlock(block_id=block_id, elements=[*extra, select])


def is_fast_path(request: Request) -> bool:
    """One required select of at most five options, answered with one button click."""
    if len(request.items) != 1:
        return False
    item = request.items[0]
    return item.type is ItemType.SELECT and item.required and len(item.options or []) <= FAST_PATH_MAX_OPTIONS


def question_blocks(
    request: Request,
    iid: str,
    *,
    version: int = 1,
    assignees: list[str],
    reason_prefix: str | None = None,
    external_threshold: int = EXTERNAL_SELECT_THRESHOLD,
    context: Context | None = None,
    changes: Sequence[ContextChange] = (),
    notes: Sequence[str] = (),
    asked_line: str | None = None,
    asked_by: str | None = None,
    declinable: bool = False,
    claimed_by: str = "",
    reassignable: bool = True,
) -> list[dict[str, Any]]:
    """The question message for interrupt `iid`: reason, assignees, inputs, Submit row, "Reassign…".

    A question asked with `claim` has "Claim" beside "Reassign…", or "Release" once `claimed_by`.
    An `ask_each` question is not `reassignable`: each person answers their own, so it has no
    "Reassign…".

    `notes` are mrkdwn lines saying who was added or handed the question since it was asked.
    `asked_line`, when given, replaces the "Asked of …" line made from `assignees`.
    `bot.slack.question_templates` builds with a placeholder there. `asked_by` (`asked_by_line`)
    opens the message, above the agent's text. A `declinable` question, asked as an MCP elicitation,
    has a "Decline" button. It comes after Submit, or after its one-click choices.

    With a `context`, the facts the answer is bound to are shown above the inputs. With `changes`,
    so is what changed since other facts voided an earlier answer.

    When the text would exceed Slack's per-message budget, the biggest selects switch to
    external_select. Then labels are shortened, though the form keeps them whole.
    """
    check_ids(iid, version)
    head = _reason_blocks(request.reason, reason_prefix, f"qh|{iid}|{version}", allow_header=True)
    meta = ContextBlock(
        block_id=f"qm|{iid}|{version}", elements=[MarkdownTextObject(text=asked_line or assignee_line(assignees))]
    )
    news = [ContextBlock(block_id=f"qn|{iid}|{version}", elements=[MarkdownTextObject(text="\n".join(notes))])]
    origin = (
        [ContextBlock(block_id=f"qo|{iid}|{version}", elements=[MarkdownTextObject(text=asked_by)])] if asked_by else []
    )
    head = [*origin, *head, meta, *(news if notes else [])]
    claim = ("release" if claimed_by else "claim") if request.claim else None
    reassign = reassign_block(f"qr|{iid}|{version}", claim, iid)
    controls: list[Block] = [reassign] if reassignable else []
    decline = [ButtonElement(text="Decline", action_id=DECLINE_ACTION_ID, value=iid)] if declinable else []
    if request.approval is not None:  # the arguments are the facts: shown as fields, with what changed above
        head += [what_changed(changes, f"qd|{iid}|{version}")] if changes else []
        shown = approval_blocks(request, iid, version, head, reassign)
        out = to_dicts([b for b in shown if controls or b is not reassign])
        limits.check_message_blocks(out)
        return out
    head += context_blocks(context, changes, iid, version)
    if is_fast_path(request) and not is_external(request.items[0], external_threshold):
        item = request.items[0]
        buttons = [
            ButtonElement(
                text=o.label,
                action_id=f"{CHOOSE_ACTION_PREFIX}{n}",
                value=o.value,
                style="primary" if o.value == item.default else None,
            )
            for n, o in enumerate(item.options or [])
        ]
        blocks = [
            *head,
            SectionBlock(
                block_id=f"qt|{iid}|{version}",
                text=MarkdownTextObject(text=clip(fold_blank_lines(item.text), SECTION_MAX)),
            ),
            ActionsBlock(block_id=f"qc|{iid}|{version}", elements=[*buttons, *decline]),
            *controls,
        ]
        out = to_dicts(blocks)
        limits.check_message_blocks(out)
        return out

    if request.has_secret:
        out = to_dicts([*head, *_form_only(request, iid, version)])
        limits.check_message_blocks(out)
        return out

    external = {i.id for i in request.items if is_external(i, external_threshold)}
    actions = ActionsBlock(
        block_id=f"qa|{iid}|{version}",
        elements=[
            ButtonElement(text="Submit", action_id=SUBMIT_ACTION_ID, value=iid, style="primary"),
            ButtonElement(text="Answer in a form", action_id=OPEN_FORM_ACTION_ID, value=iid),
            *decline,
        ],
    )

    def build(label_cap: int) -> list[dict[str, Any]]:
        inputs = [
            input_block(
                i,
                f"q|{iid}|{version}|{i.id}",
                external=i.id in external,
                other=request.typed_other(i.id),
                label_cap=label_cap,
            )
            for i in request.items
        ]
        return to_dicts([*head, *inputs, actions, *controls])

    out = build(LABEL_MAX)
    # Shed option text first: the biggest static selects load their options on demand instead.
    by_size = by_option_text(request, external)
    while limits.text_length(out) > QUESTION_TEXT_BUDGET and by_size:
        external.add(by_size.pop(0).id)
        out = build(LABEL_MAX)
    if limits.text_length(out) > QUESTION_TEXT_BUDGET:
        out = build(largest_fitting(40, LABEL_MAX, lambda cap: limits.text_length(build(cap)) <= QUESTION_TEXT_BUDGET))
    limits.check_message_blocks(out)
    return out


def _form_only(request: Request, iid: str, version: int) -> list[Block]:
    """A request with a secret is answered only in the form.

    Its items are listed, and the one button opens the form. No input sits in the message, so
    nothing secret is typed into the thread.
    """
    share = max(60, (QUESTION_TEXT_BUDGET - 2000) // len(request.items))
    lines = [f"• {clip(i.text, share)}" + (" :lock:" if i.is_secret else "") for i in request.items]  # clip escapes
    listing = SectionBlock(
        block_id=f"qt|{iid}|{version}", text=MarkdownTextObject(text=cut_escaped("\n".join(lines), SECTION_MAX))
    )
    note = ContextBlock(elements=[MarkdownTextObject(text=FORM_ONLY_NOTE)])
    button = ButtonElement(text="Answer in a form", action_id=OPEN_FORM_ACTION_ID, value=iid, style="primary")
    return [listing, note, ActionsBlock(block_id=f"qa|{iid}|{version}", elements=[button])]


def modal_view(
    request: Request,
    iid: str,
    *,
    version: int = 1,
    external_threshold: int = EXTERNAL_SELECT_THRESHOLD,
    channel: str | None = None,
    reassignable: bool = True,
) -> dict[str, Any]:
    """The "Answer in a form" modal: full-length labels, Slack's own required-field checks.

    `channel` is where the form was opened from. Its submission then counts as given there, since a
    submission carries no channel of its own. An `ask_each` question's form is not `reassignable`,
    as its message is not.

    The form keeps within a modal's budget (`limits.MAX_VIEW_TEXT`, `limits.MAX_VIEW_JSON`), as the
    message keeps within its own. First the biggest static selects load their options as people
    type. That is external_select, served by `bot.listeners.options`. Then option descriptions are
    shortened, then labels.
    """
    check_ids(iid, version)
    reason = _reason_blocks(request.reason, None, f"fh|{iid}|{version}", allow_header=False)
    external = {i.id for i in request.items if is_external(i, external_threshold)}

    approval = request.approval
    shown = [i for i in request.items if approval is None or i.id in approval.editable]  # Edit…: the arguments
    fixed = fixed_args_blocks(request) if approval is not None else []
    reassign = [reassign_block(f"fr|{iid}|{version}")] if reassignable else []

    def build(label_cap: int = LABEL_MAX, description_cap: int = OPTION_DESCRIPTION_MAX) -> dict[str, Any]:
        caps = {"label_cap": label_cap, "description_cap": description_cap}
        inputs = [
            input_block(
                i, f"f|{iid}|{i.id}", external=i.id in external, other=request.typed_other(i.id), modal=True, **caps
            )
            for i in shown
        ]
        return View(
            type="modal",
            callback_id=FORM_CALLBACK_ID,
            private_metadata=f"{iid}|{channel}" if channel else iid,
            title=PlainTextObject(text="Edit and approve" if approval else "Answer"),
            submit=PlainTextObject(text="Approve" if approval else "Submit"),
            close=PlainTextObject(text="Cancel"),
            blocks=[*reason, *fixed, *inputs, *reassign],
        ).to_dict()

    view = build()
    by_size = by_option_text(request, external)
    while not limits.within_view_budget(view) and by_size:
        external.add(by_size.pop(0).id)
        view = build()
    if not limits.within_view_budget(view):
        cap = largest_fitting(0, OPTION_DESCRIPTION_MAX, lambda c: limits.within_view_budget(build(description_cap=c)))
        view = build(description_cap=cap)
        if not limits.within_view_budget(view):
            labels = largest_fitting(40, LABEL_MAX, lambda n: limits.within_view_budget(build(n, description_cap=0)))
            view = build(labels, description_cap=0)
    limits.check_view(view)
    return view


def fallback_text(request: Request) -> str:
    """The message's top-level `text` (notifications, screen readers): escaped, at most 4000 chars."""
    lines = [f"Question: {escape(fold_blank_lines(request.reason))}", *(f"• {escape(i.text)}" for i in request.items)]
    return cut_escaped("\n".join(lines), FALLBACK_MAX)
