"""The terminal's controls: one prompt_toolkit prompt per item type.

Every control shows the question with its default pre-filled. It refuses an unusable answer in
place, in the port's own words. So the person fixes it before moving on. A choice works with the
arrow keys. It also takes typed text that `resolve_choice` understands, like "2", "high" or "the
last one". The list highlights the option the typed reply names, as it is typed. Enter on an
empty line takes the highlighted option. Each control is an ordinary single-line or multiline
`PromptSession` prompt. So it behaves the same in any VT100 terminal and over a pty.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from prompt_toolkit import PromptSession
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition, to_filter
from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout.controls import BufferControl
from prompt_toolkit.shortcuts import print_formatted_text
from prompt_toolkit.styles import Style
from prompt_toolkit.validation import ValidationError, Validator

from workers.interaction import AnswerValue, ChoiceError, Item, ItemType, resolve_choice
from workers.interaction.validation import (
    TYPED_FROM_TEXT,
    check_value,
    from_text,
    normalise,
    number_words,
    text_problem,
    value_text,
)

REQUIRED = "an answer is required"
STYLE = Style.from_dict(
    {
        "question": "bold",
        "hint": "ansibrightblack",
        "current": "bold ansicyan",
        "checked": "ansigreen",
        "done": "ansigreen",
        "problem": "ansired",
        "placeholder": "ansibrightblack",
        "validation-toolbar": "bg:ansired ansiwhite",
    }
)

Check = Callable[[str], str | None]


class _Check(Validator):
    """Refuses text whenever `check` names a problem, which prompt_toolkit shows."""

    def __init__(self, check: Check) -> None:
        self._check = check

    def validate(self, document: Document) -> None:
        problem = self._check(document.text)
        if problem:
            raise ValidationError(cursor_position=len(document.text), message=problem)


def parse_choices(item: Item, text: str) -> list[str]:
    """The option values a typed multi-select reply names, in option order.

    Replies look like `1, 3`, `api; web` or `1 3`. Each comma- or semicolon-separated part is
    resolved with `resolve_choice`. A reply of bare numbers may also be separated by spaces. Raises
    `ChoiceError` for the first part naming no option, or more than one.
    """
    parts = [p for p in re.split(r"[,;]", text) if p.strip()]
    if len(parts) == 1 and re.fullmatch(r"\s*\d+(?:\s+\d+)+\s*", text):
        parts = text.split()
    chosen = {resolve_choice(item, part) for part in parts}
    return [v for v in item.option_values() if v in chosen]


def _heading(item: Item, note: str = "") -> StyleAndTextTuples:
    lines: StyleAndTextTuples = [("class:question", f"? {item.text}")]
    if note:
        lines.append(("class:hint", f"  {note}"))
    return [*lines, ("", "\n")]


def _optional(item: Item, what: str = "leave empty to skip") -> str:
    return "" if item.required else f"(optional: {what})"


def _text_check(item: Item) -> Check:
    """Required-ness plus the port's own check of a free-text or date answer."""

    def check(text: str) -> str | None:
        value = text.strip()
        if not value:
            return REQUIRED if item.required else None
        return check_value(item, value)

    return check


_TYPED_PLACEHOLDERS = {
    ItemType.NUMBER: "a number",
    ItemType.BOOLEAN: "yes or no",
    ItemType.EMAIL: "name@example.com",
    ItemType.URL: "https://…",
    ItemType.TIME: "HH:MM (24-hour)",
    ItemType.DATETIME: "YYYY-MM-DDTHH:MM:SSZ (UTC)",
}


def _typed_check(item: Item) -> Check:
    """Required-ness first, then the port's reading and check of typed text."""

    def check(text: str) -> str | None:
        if not text.strip():
            return REQUIRED if item.required else None
        value = from_text(item, text)
        if value is None:
            return text_problem(item)
        return check_value(item, value)

    return check


def _list_keys(state: dict[str, int], size: int) -> KeyBindings:
    """Up and Down move the list's cursor, wrapping around.

    Using the list drops a half-typed reply.
    """
    keys = KeyBindings()

    def move(step: int) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            state["cursor"] = (state["cursor"] + step) % size
            event.current_buffer.reset()

        return handler

    keys.add("up")(move(-1))
    keys.add("down")(move(1))
    return keys


def _session(**kwargs: object) -> PromptSession[str]:
    """A prompt whose refusal message sits on the row right below the input.

    Where the terminal reports the cursor's position, prompt_toolkit lets the input window grow. It
    grows to the bottom of the screen. That pushes the message drawn after it to the last row, far
    from the prompt. So the input window is kept to its text.
    """
    session: PromptSession[str] = PromptSession(
        style=STYLE,
        erase_when_done=True,
        reserve_space_for_menu=0,
        validate_while_typing=False,
        **kwargs,  # type: ignore[arg-type]
    )
    for window in session.layout.find_all_windows():
        if isinstance(window.content, BufferControl) and window.content.buffer is session.default_buffer:
            window.dont_extend_height = to_filter(True)
    return session


class TerminalPrompter:
    """Asks one item at a time in the terminal.

    Raises KeyboardInterrupt or EOFError when the person quits.
    """

    def ask(self, item: Item) -> AnswerValue:
        """The person's valid answer to `item`, or None for an optional item left empty."""
        if item.type is ItemType.SELECT:
            value: AnswerValue = self.select(item)
        elif item.type is ItemType.MULTI_SELECT:
            value = self.multi_select(item)
        elif item.type is ItemType.DATE:
            value = self.date(item)
        elif item.type is ItemType.SECRET:
            value = self.secret(item)
        elif item.type in TYPED_FROM_TEXT:
            value = self.typed(item)
        else:
            value = self.free_text(item)
        self._echo(item, value)
        return value

    def problem(self, item: Item, message: str) -> None:
        """Tell the person why their answer to `item` was refused, before re-asking."""
        print_formatted_text(FormattedText([("class:problem", "✘ "), ("", f"{item.text}: {message}")]), style=STYLE)

    # ---- the controls ----------------------------------------------------------
    def select(self, item: Item) -> str | None:
        """Arrow keys move the highlight and Enter takes it.

        Or type a number or name and press Enter.
        """
        options = item.options or []
        # An optional select gets a "(skip)" row, highlighted unless there is a default.
        rows: list[str | None] = [o.value for o in options] + ([] if item.required else [None])
        start = rows.index(item.default) if item.default in rows else (0 if item.required else len(rows) - 1)
        state = {"cursor": start}
        session = _session()

        def typed() -> int | None:
            """The row the typed reply names, or None.

            With nothing typed, it is the cursor's row.
            """
            text = session.default_buffer.text
            if not text.strip():
                return state["cursor"]
            try:
                return rows.index(resolve_choice(item, text))
            except ChoiceError:
                return None

        def message() -> StyleAndTextTuples:
            lines = _heading(item, _optional(item, "pick (skip) to leave it"))
            marked = typed()
            width = max(len(o.label) for o in options)
            for n, value in enumerate(rows):
                option = item.option(value) if value is not None else None
                label = f"{n + 1}. {option.label:<{width}}" if option else "   (skip)"
                extra = f"  {option.description}" if option and option.description else ""
                style = "class:current" if n == marked else ""
                lines += [(style, f"  {'>' if n == marked else ' '} {label}"), ("class:hint", extra), ("", "\n")]
            lines.append(("class:hint", "  Up/Down and Enter, or type a number or name: "))
            return lines

        keys = _list_keys(state, len(rows))

        def check(text: str) -> str | None:
            if not text.strip():
                return None
            try:
                resolve_choice(item, text)
            except ChoiceError as exc:
                return str(exc)
            return None

        text = session.prompt(message, key_bindings=keys, validator=_Check(check))
        return resolve_choice(item, text) if text.strip() else rows[state["cursor"]]

    def multi_select(self, item: Item) -> list[str]:
        """Up/Down move, Space ticks, Enter confirms.

        Or type numbers or names separated by commas.
        """
        options = item.options or []
        default = item.default if isinstance(item.default, list) else []
        ticked = {v for v in default if v in item.option_values()}
        state = {"cursor": 0}
        session = _session()

        def shown() -> set[str]:
            text = session.default_buffer.text
            if not text.strip():
                return ticked
            try:
                return set(parse_choices(item, text))
            except ChoiceError:
                return set()

        def message() -> StyleAndTextTuples:
            lines = _heading(item, _optional(item, "tick none to skip") or "(pick any)")
            marks = shown()
            typing = bool(session.default_buffer.text.strip())
            for n, option in enumerate(options):
                here = n == state["cursor"] and not typing
                box = "[x]" if option.value in marks else "[ ]"
                extra = f"  {option.description}" if option.description else ""
                lines += [
                    ("class:current" if here else "", f"  {'>' if here else ' '} "),
                    ("class:checked" if option.value in marks else "", box),
                    ("class:current" if here else "", f" {n + 1}. {option.label}"),
                    ("class:hint", extra),
                    ("", "\n"),
                ]
            lines.append(
                ("class:hint", "  Up/Down, Space ticks, Enter confirms; or type numbers or names, comma separated: ")
            )
            return lines

        keys = _list_keys(state, len(options))

        @keys.add(" ", filter=Condition(lambda: not session.default_buffer.text))
        def _toggle(event: KeyPressEvent) -> None:
            ticked.symmetric_difference_update({options[state["cursor"]].value})
            event.current_buffer.reset()  # the line is empty anyway; this makes Enter check afresh

        def check(text: str) -> str | None:
            if text.strip():
                try:
                    parse_choices(item, text)
                except ChoiceError as exc:
                    return str(exc)
                return None
            if item.required and not ticked:
                return f"{REQUIRED}: tick at least one with Space, or type numbers like 1,3"
            return None

        text = session.prompt(message, key_bindings=keys, validator=_Check(check))
        if text.strip():
            return parse_choices(item, text)
        return [v for v in item.option_values() if v in ticked]

    def free_text(self, item: Item) -> str | None:
        """A line of text, or several when the item is multiline.

        Esc then Enter, or Alt+Enter, finishes several lines.
        """
        notes = [n for n in (_optional(item),) if n]
        if item.multiline:
            notes.append("Enter adds a line; Esc then Enter (or Alt+Enter) finishes")
        heading = _heading(item, "  ".join(notes))
        session = _session(
            multiline=item.multiline,
            prompt_continuation=lambda width, line, wrap: ". ".rjust(width),
            placeholder=FormattedText([("class:placeholder", item.placeholder or "")]),
        )
        default = item.default if isinstance(item.default, str) else ""
        text = session.prompt([*heading, ("", "> ")], default=default, validator=_Check(_text_check(item)))
        return text.strip() or None

    def secret(self, item: Item) -> str | None:
        """A line typed without echo.

        prompt_toolkit's password mode shows `*` for each character.
        """
        heading = _heading(item, "  ".join(n for n in (_optional(item), "typed hidden; never shown again") if n))
        session = _session(is_password=True)
        text = session.prompt([*heading, ("", "> ")], validator=_Check(_text_check(item)))
        return text.strip() or None

    def typed(self, item: Item) -> AnswerValue:
        """A typed number, yes/no, email, URL, time or date-and-time.

        The port reads and checks it as a typed reply. An optional yes/no left empty is No, like an
        unticked box in Slack.
        """
        session = _session(placeholder=FormattedText([("class:placeholder", _TYPED_PLACEHOLDERS[item.type])]))
        default = value_text(item.default) if item.default is not None else ""
        notes = [n for n in (_optional(item, "leave empty for No" if item.is_boolean else "leave empty to skip"),) if n]
        if item.type is ItemType.NUMBER:
            notes.insert(0, number_words(item))
        message = [*_heading(item, "  ".join(notes)), ("", "> ")]
        text = session.prompt(message, default=default, validator=_Check(_typed_check(item)))
        if not text.strip():
            return False if item.is_boolean else None
        return normalise(item, from_text(item, text))

    def date(self, item: Item) -> str | None:
        """A date typed as YYYY-MM-DD, a malformed one refused with the reason."""
        session = _session(placeholder=FormattedText([("class:placeholder", "YYYY-MM-DD")]))
        default = item.default if isinstance(item.default, str) else ""
        message = [*_heading(item, _optional(item)), ("", "> ")]
        text = session.prompt(message, default=default, validator=_Check(_text_check(item)))
        return text.strip() or None

    # ---- after an answer ---------------------------------------------------------
    def _echo(self, item: Item, value: AnswerValue) -> None:
        """Leave one compact line per answered item where its control was."""
        separator = " " if item.text.rstrip().endswith(("?", ":")) else ": "
        done = FormattedText([("class:done", "✔ "), ("", f"{item.text.rstrip()}{separator}{describe(item, value)}")])
        print_formatted_text(done, style=STYLE)


def describe(item: Item, value: AnswerValue) -> str:
    """An answer as people read it: option labels, or "(skipped)" for none."""
    if value is None or value == []:
        return "(skipped)"
    if item.is_secret:
        return "(given; hidden)"
    if isinstance(value, list):
        return ", ".join(_label(item, v) for v in value)
    if item.type is ItemType.SELECT and isinstance(value, str):
        return _label(item, value)
    if not isinstance(value, str):
        return value_text(value)
    if "\n" in value:
        return "\n" + "\n".join(f"    {line}" for line in value.splitlines())
    return value


def _label(item: Item, value: str) -> str:
    option = item.option(value)
    return option.label if option else value
