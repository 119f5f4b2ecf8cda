"""Block Kit for a question: the message people answer in a thread, its form, and its locked states.

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
from collections.abc import Callable, Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    CheckboxesElement,
    ContextBlock,
    DatePickerElement,
    DateTimePickerElement,
    EmailInputElement,
    ExternalDataMultiSelectElement,
    ExternalDataSelectElement,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    NumberInputElement,
    Option,
    PlainTextInputElement,
    PlainTextObject,
    RadioButtonsElement,
    SectionBlock,
    StaticMultiSelectElement,
    StaticSelectElement,
    TimePickerElement,
    UrlInputElement,
    UserSelectElement,
)
from slack_sdk.models.views import View

from bot.slack import limits
from bot.slack.blocks_approval import approval_answered_blocks, approval_blocks, fixed_args_blocks
from bot.slack.blocks_context import context_blocks, deciding_on, what_changed
from bot.slack.limits import HEADER_MAX, LABEL_MAX, OPTION_DESCRIPTION_MAX, SECTION_MAX, utf16_len
from bot.slack.mrkdwn import (
    assignee_ref,
    clip,
    cut_escaped,
    date_token,
    escape,
    fold_blank_lines,
    origin_ref,
    split_escaped,
    truncate,
    user_ref,
)
from workers.interaction import Context, ContextChange
from workers.interaction.models import Answer, Item, ItemType, Request
from workers.interaction.validation import TYPED_FROM_TEXT, number_words, parse_datetime, show_number, value_text

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

ANSWER_ACTION_ID = "answer"
SUBMIT_ACTION_ID = "parley_submit"
OPEN_FORM_ACTION_ID = "parley_open_form"
CHOOSE_ACTION_PREFIX = "parley_choose_"
DECLINE_ACTION_ID = "parley_decline"
REASSIGN_ACTION_ID = "parley_reassign"
CLAIM_ACTION_ID = "parley_claim"
RELEASE_ACTION_ID = "parley_release"
FORM_CALLBACK_ID = "parley_form"

_IID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PLACEHOLDERS = {
    ItemType.SELECT: "Choose an option",
    ItemType.MULTI_SELECT: "Choose options",
    ItemType.FREE_TEXT: "Type your answer",
    ItemType.DATE: "Pick a date",
    ItemType.SECRET: "Type the secret",
    ItemType.NUMBER: "Type a number",
    ItemType.BOOLEAN: "Yes or no",
    ItemType.EMAIL: "name@example.com",
    ItemType.URL: "https://…",
    ItemType.TIME: "Pick a time",
    ItemType.DATETIME: "Pick a date and time",
}
MODAL_ONLY = frozenset({ItemType.NUMBER, ItemType.EMAIL, ItemType.URL})
"""Items whose own element Slack allows only in modals: a message shows them as a text input that
Parley reads and validates at Submit (`workers.interaction.validation.from_text`)."""
YES, NO = "true", "false"
"""The option values of a boolean item's Yes / No radio buttons (and its one checkbox, `YES`)."""
SECRET_HINT = "Sealed for the run alone: nobody sees it again, and it is deleted when the run ends."
FORM_ONLY_NOTE = ":lock: This question asks for a secret, so it is answered only in its form: click *Answer in a form*."
_SHORTENED_HINT = "Question shortened here; “Answer in a form” shows it in full."
OTHER_HINT = "Required: choose one, or fill in “{other}” below."
"""Under a required choice that its "type your own" item may stand in for: Slack can only show both as optional."""


def check_ids(iid: str, version: int) -> None:
    """Refuse an interrupt id or message version that cannot go into a block id."""
    if not isinstance(iid, str) or not _IID.fullmatch(iid):
        raise ValueError(f"interrupt id {iid!r} is not a url-safe token")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ValueError(f"message version must be a non-negative int, got {version!r}")


def _dicts(blocks: list[Block]) -> list[dict[str, Any]]:
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


def _description(text: str | None, cap: int) -> str | None:
    """An option's description cut to `cap` (none at 0), keeping a form within budget."""
    return truncate(text, cap) if text and cap > 0 else None


def _option(item: Item, value: str, description_cap: int = OPTION_DESCRIPTION_MAX) -> Option:
    opt = item.option(value)
    label = opt.label if opt else value
    return Option(value=value, label=label, description=_description(opt.description if opt else None, description_cap))


def format_hint(item: Item) -> str | None:
    """The input's hint for what a typed item expects, where its element does not show it."""
    if item.type is ItemType.NUMBER:
        return number_words(item).capitalize()
    if item.type is ItemType.FREE_TEXT and item.pattern_hint:
        return f"Expected: {item.pattern_hint}"
    if item.type is ItemType.DATETIME:
        return "Answered in your Slack time zone; the run gets it in UTC."
    return None


def _typed_element(item: Item, placeholder: PlainTextObject, *, modal: bool) -> Any:
    """The element of a number, boolean, email, URL, time or datetime item.

    Number, email and URL inputs exist only in modals. In a message they are a plain text input,
    read and validated at Submit. Slack wants a number input's bounds as strings.
    """
    default = item.default
    text_default = value_text(default) if default is not None else None
    if item.type in MODAL_ONLY and not modal:
        return PlainTextInputElement(action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_value=text_default)
    if item.type is ItemType.NUMBER:
        return NumberInputElement(
            action_id=ANSWER_ACTION_ID,
            placeholder=placeholder,
            is_decimal_allowed=not item.integer,
            min_value=show_number(item.min) if item.min is not None else None,
            max_value=show_number(item.max) if item.max is not None else None,
            initial_value=text_default,
        )
    if item.type is ItemType.EMAIL:
        return EmailInputElement(action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_value=text_default)
    if item.type is ItemType.URL:
        return UrlInputElement(action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_value=text_default)
    if item.type is ItemType.BOOLEAN:
        yes, no = Option(value=YES, label="Yes"), Option(value=NO, label="No")
        if not item.required:  # one checkbox: left unchecked, the answer is False
            return CheckboxesElement(
                action_id=ANSWER_ACTION_ID, options=[yes], initial_options=[yes] if default is True else None
            )
        initial = yes if default is True else no if default is False else None
        return RadioButtonsElement(action_id=ANSWER_ACTION_ID, options=[yes, no], initial_option=initial)
    if item.type is ItemType.TIME:
        return TimePickerElement(
            action_id=ANSWER_ACTION_ID,
            placeholder=placeholder,
            initial_time=default if isinstance(default, str) else None,
        )
    at = parse_datetime(default) if isinstance(default, str) else None
    return DateTimePickerElement(action_id=ANSWER_ACTION_ID, initial_date_time=int(at.timestamp()) if at else None)


def _element(item: Item, *, external: bool, description_cap: int = OPTION_DESCRIPTION_MAX, modal: bool = False) -> Any:
    """The input element for `item`, default pre-filled, descriptions cut to `description_cap`."""
    placeholder = PlainTextObject(text=item.placeholder or _PLACEHOLDERS[item.type])
    if item.type in TYPED_FROM_TEXT:
        return _typed_element(item, placeholder, modal=modal)
    default = item.default
    options = [
        Option(value=o.value, label=o.label, description=_description(o.description, description_cap))
        for o in item.options or []
    ]
    if item.type is ItemType.SELECT:
        initial = _option(item, default, description_cap) if isinstance(default, str) else None
        if external:
            return ExternalDataSelectElement(
                action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_option=initial, min_query_length=0
            )
        return StaticSelectElement(
            action_id=ANSWER_ACTION_ID, placeholder=placeholder, options=options, initial_option=initial
        )
    if item.type is ItemType.MULTI_SELECT:
        initial_list = (
            [_option(item, v, description_cap) for v in default] if isinstance(default, list) and default else None
        )
        if external:
            return ExternalDataMultiSelectElement(
                action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_options=initial_list, min_query_length=0
            )
        return StaticMultiSelectElement(
            action_id=ANSWER_ACTION_ID, placeholder=placeholder, options=options, initial_options=initial_list
        )
    if item.type is ItemType.SECRET:  # never pre-filled: a secret has no default
        return PlainTextInputElement(action_id=ANSWER_ACTION_ID, placeholder=placeholder, max_length=item.text_limit)
    if item.type is ItemType.FREE_TEXT:
        return PlainTextInputElement(
            action_id=ANSWER_ACTION_ID,
            placeholder=placeholder,
            multiline=item.multiline,
            max_length=item.text_limit,
            initial_value=default if isinstance(default, str) and default else None,
        )
    return DatePickerElement(
        action_id=ANSWER_ACTION_ID, placeholder=placeholder, initial_date=default if isinstance(default, str) else None
    )


def _input(
    item: Item,
    block_id: str,
    *,
    external: bool,
    other: Item | None = None,
    label_cap: int = LABEL_MAX,
    description_cap: int = OPTION_DESCRIPTION_MAX,
    modal: bool = False,
) -> InputBlock:
    """The input block for `item`.

    With `other`, its "type your own" item, a required choice is optional to Slack. Slack has no
    "one of these two" check, so the form's own validation asks for one.
    """
    text = fold_blank_lines(item.text)
    label = truncate(text, label_cap)
    one_of = other is not None and item.required
    if label != text:
        hint: str | None = _SHORTENED_HINT
    elif item.is_secret:
        hint = SECRET_HINT
    elif one_of and other is not None:
        hint = OTHER_HINT.format(other=truncate(other.text, LABEL_MAX))
    else:
        hint = format_hint(item)
    return InputBlock(
        block_id=block_id,
        label=PlainTextObject(text=label),
        element=_element(item, external=external, description_cap=description_cap, modal=modal),
        optional=not item.required or one_of,
        hint=PlainTextObject(text=hint) if hint else None,
    )


def _is_external(item: Item, threshold: int) -> bool:
    return item.is_choice and len(item.options or []) > threshold


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
) -> list[dict[str, Any]]:
    """The question message for interrupt `iid`: reason, assignees, inputs, Submit row, "Reassign…".

    A question asked with `claim` has "Claim" beside "Reassign…", or "Release" once `claimed_by`.

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
    decline = [ButtonElement(text="Decline", action_id=DECLINE_ACTION_ID, value=iid)] if declinable else []
    if request.approval is not None:  # the arguments are the facts: shown as fields, with what changed above
        head += [what_changed(changes, f"qd|{iid}|{version}")] if changes else []
        out = _dicts(approval_blocks(request, iid, version, head, reassign))
        limits.check_message_blocks(out)
        return out
    head += context_blocks(context, changes, iid, version)
    if is_fast_path(request) and not _is_external(request.items[0], external_threshold):
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
            reassign,
        ]
        out = _dicts(blocks)
        limits.check_message_blocks(out)
        return out

    if request.has_secret:
        out = _dicts([*head, *_form_only(request, iid, version)])
        limits.check_message_blocks(out)
        return out

    external = {i.id for i in request.items if _is_external(i, external_threshold)}
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
            _input(
                i,
                f"q|{iid}|{version}|{i.id}",
                external=i.id in external,
                other=request.typed_other(i.id),
                label_cap=label_cap,
            )
            for i in request.items
        ]
        return _dicts([*head, *inputs, actions, reassign])

    out = build(LABEL_MAX)
    # Shed option text first: the biggest static selects load their options on demand instead.
    by_size = _by_option_text(request, external)
    while limits.text_length(out) > QUESTION_TEXT_BUDGET and by_size:
        external.add(by_size.pop(0).id)
        out = build(LABEL_MAX)
    if limits.text_length(out) > QUESTION_TEXT_BUDGET:
        out = build(_largest(40, LABEL_MAX, lambda cap: limits.text_length(build(cap)) <= QUESTION_TEXT_BUDGET))
    limits.check_message_blocks(out)
    return out


def _by_option_text(request: Request, external: set[str]) -> list[Item]:
    """The choice items still showing their options, the most option text first."""
    return sorted(
        (i for i in request.items if i.is_choice and i.id not in external),
        key=lambda i: -sum(utf16_len(o.label) + utf16_len(o.description or "") for o in i.options or []),
    )


def _largest(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest cap in `low..high` that `fits`, else `low`.

    `fits` only turns false as the cap grows.
    """
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


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


def _answer_text(item: Item, answer: Answer | None, room: int, answered_by: str = "") -> str:
    value = answer.value if answer else None
    if value is None or value == [] or value == "":
        return "_no answer_"
    if item.is_secret:  # the value is never shown, not even masked: who gave it is all there is to say
        return f"_provided by {user_ref(answered_by)}_" if answered_by else "_provided_"
    if isinstance(value, list):
        labels = [option.label if (option := item.option(v)) else v for v in value]
        return clip(", ".join(labels), room)
    if item.is_choice and isinstance(value, str):
        opt = item.option(value)
        return clip(opt.label if opt else value, room)
    return clip(value_text(value), room)


def _locked_reason(request: Request) -> list[Block]:
    return [SectionBlock(text=MarkdownTextObject(text=clip(fold_blank_lines(request.reason), SECTION_MAX)))]


def answered_blocks(
    request: Request, answers: list[Answer], *, answered_by: str, answered_at: float, context: Context | None = None
) -> list[dict[str, Any]]:
    """The locked message after an answer: reason, facts given on, answers, who and when."""
    if request.approval is not None:
        out = _dicts(approval_answered_blocks(request, answers, answered_by=answered_by, answered_at=answered_at))
        limits.check_message_blocks(out)
        return out
    by_id = {a.id: a for a in answers}
    reason = _dicts([*_locked_reason(request), *([deciding_on(context)] if context is not None else [])])
    share = min(SECTION_MAX, (QUESTION_TEXT_BUDGET - limits.text_length(reason) - 200) // len(request.items))
    sections: list[Block] = []
    for item in request.items:
        title = clip(item.text, max(60, min(1000, share // 2)))
        body = _answer_text(item, by_id.get(item.id), max(20, share - utf16_len(title) - 3), answered_by)
        sections.append(SectionBlock(text=MarkdownTextObject(text=f"*{title}*\n{body}")))
    who = ContextBlock(
        elements=[MarkdownTextObject(text=f"Answered by {user_ref(answered_by)}, {date_token(answered_at)}")]
    )
    out = [*reason, *_dicts([*sections, who])]
    limits.check_message_blocks(out)
    return out


def closed_blocks(request: Request, *, status: str, detail: str = "", by: str | None = None) -> list[dict[str, Any]]:
    """The locked message for a question closed unanswered.

    `status` "cancelled" reads "Cancelled", and "declined" reads "Declined". Either names `by`, a
    user id, when given. "expired" reads "Expired without an answer". `detail` is escaped free text
    shown under it.
    """
    if status in ("cancelled", "declined"):
        headline = f":no_entry_sign: {status.capitalize()}" + (f" by {user_ref(by)}" if by else "")
    elif status == "expired":
        headline = ":hourglass: Expired without an answer"
    else:
        headline = clip(status.capitalize(), 200)
    text = headline + (f"\n{clip(detail, 1000)}" if detail else "")
    out = _dicts([*_locked_reason(request), SectionBlock(text=MarkdownTextObject(text=text))])
    limits.check_message_blocks(out)
    return out


def modal_view(
    request: Request,
    iid: str,
    *,
    version: int = 1,
    external_threshold: int = EXTERNAL_SELECT_THRESHOLD,
    channel: str | None = None,
) -> dict[str, Any]:
    """The "Answer in a form" modal: full-length labels, Slack's own required-field checks.

    `channel` is where the form was opened from. Its submission then counts as given there, since a
    submission carries no channel of its own.

    The form keeps within a modal's budget (`limits.MAX_VIEW_TEXT`, `limits.MAX_VIEW_JSON`), as the
    message keeps within its own. First the biggest static selects load their options as people
    type. That is external_select, served by `bot.listeners.options`. Then option descriptions are
    shortened, then labels.
    """
    check_ids(iid, version)
    reason = _reason_blocks(request.reason, None, f"fh|{iid}|{version}", allow_header=False)
    external = {i.id for i in request.items if _is_external(i, external_threshold)}

    approval = request.approval
    shown = [i for i in request.items if approval is None or i.id in approval.editable]  # Edit…: the arguments
    fixed = fixed_args_blocks(request) if approval is not None else []

    def build(label_cap: int = LABEL_MAX, description_cap: int = OPTION_DESCRIPTION_MAX) -> dict[str, Any]:
        caps = {"label_cap": label_cap, "description_cap": description_cap}
        inputs = [
            _input(i, f"f|{iid}|{i.id}", external=i.id in external, other=request.typed_other(i.id), modal=True, **caps)
            for i in shown
        ]
        return View(
            type="modal",
            callback_id=FORM_CALLBACK_ID,
            private_metadata=f"{iid}|{channel}" if channel else iid,
            title=PlainTextObject(text="Edit and approve" if approval else "Answer"),
            submit=PlainTextObject(text="Approve" if approval else "Submit"),
            close=PlainTextObject(text="Cancel"),
            blocks=[*reason, *fixed, *inputs, reassign_block(f"fr|{iid}|{version}")],
        ).to_dict()

    view = build()
    by_size = _by_option_text(request, external)
    while not limits.within_view_budget(view) and by_size:
        external.add(by_size.pop(0).id)
        view = build()
    if not limits.within_view_budget(view):
        cap = _largest(0, OPTION_DESCRIPTION_MAX, lambda c: limits.within_view_budget(build(description_cap=c)))
        view = build(description_cap=cap)
        if not limits.within_view_budget(view):
            labels = _largest(40, LABEL_MAX, lambda n: limits.within_view_budget(build(n, description_cap=0)))
            view = build(labels, description_cap=0)
    limits.check_view(view)
    return view


def fallback_text(request: Request) -> str:
    """The message's top-level `text` (notifications, screen readers): escaped, at most 4000 chars."""
    lines = [f"Question: {escape(fold_blank_lines(request.reason))}", *(f"• {escape(i.text)}" for i in request.items)]
    return cut_escaped("\n".join(lines), FALLBACK_MAX)


def locked_text(request: Request, outcome: str) -> str:
    """A locked question's top-level `text`: its outcome and reason, escaped and cut.

    Outcomes read "Answered by <@U…>", "Cancelled" or "Expired". The text is cut to Slack's 4,000
    characters. Escaping alone can make a 3,000-character reason several times longer.
    """
    return cut_escaped(f"{outcome}: {escape(request.reason)}", FALLBACK_MAX)
