"""The terminal's typed prompts for number, yes/no, email, URL, time and date-and-time items.

Keystrokes reach each control through a pipe input, as in `test_terminal`; a refused value
keeps the prompt open until it is fixed, so a control that accepted it would return early.
"""

from __future__ import annotations

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from terminal_support import CLEAR
from test_terminal_errors import screen_when_refused

from bot.terminal import TerminalPrompter
from workers.interaction import AnswerValue, Item

pytestmark = pytest.mark.unit

REPLICAS = Item(id="replicas", text="Replicas", type="number", min=1, max=10, integer=True, default=3)


def answer(item: Item, keys: str) -> AnswerValue:
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        pipe.close()
        with create_app_session(input=pipe, output=DummyOutput()):
            return TerminalPrompter().ask(item)


def test_a_number_is_bounded_typed_and_prefilled() -> None:
    assert answer(REPLICAS, "\r") == 3
    assert answer(REPLICAS, CLEAR + "11\r" + CLEAR + "four\r" + CLEAR + "2.5\r" + CLEAR + "7\r") == 7
    ratio = Item(id="ratio", text="Ratio", type="number", max=1, required=False)
    value = answer(ratio, "1\r")
    assert (value, type(value)) == (1.0, float)
    assert answer(ratio, "\r") is None


def test_yes_or_no() -> None:
    go = Item(id="go", text="Go ahead?", type="boolean")
    assert answer(go, "maybe\r" + CLEAR + "Yes\r") is True
    assert answer(go, "n\r") is False
    with pytest.raises(EOFError):
        answer(go, "\r")  # required: an empty line is refused
    assert answer(Item(id="nt", text="Notify?", type="boolean", required=False), "\r") is False


@pytest.mark.parametrize(
    ("item", "keys", "value"),
    [
        (Item(id="c", text="Contact", type="email"), "ops at x\r" + CLEAR + "ops@example.com\r", "ops@example.com"),
        (Item(id="u", text="Runbook", type="url"), "ftp://x.io\r" + CLEAR + "https://x.io/rb\r", "https://x.io/rb"),
        (Item(id="t", text="At", type="time"), "25:00\r" + CLEAR + "9:05\r", "09:05"),
        (
            Item(id="d", text="Start", type="datetime"),
            "tomorrow\r" + CLEAR + "2026-12-04T17:30+00:00\r",
            "2026-12-04T17:30:00Z",
        ),
    ],
)
def test_typed_text_is_checked_until_it_fits(item: Item, keys: str, value: str) -> None:
    assert answer(item, keys) == value


@pytest.mark.parametrize(
    ("item", "keys", "reason"),
    [
        (REPLICAS, "\x15" + "11\r", "at most 10"),
        (Item(id="c", text="Contact", type="email"), "nope\r", "not an email address"),
    ],
    ids=["number", "email"],
)
def test_a_refused_value_is_explained_next_to_the_input(item: Item, keys: str, reason: str) -> None:
    screen = screen_when_refused(item, keys, reason)
    typed = keys.replace("\x15", "").rstrip("\r")
    input_row, reason_row = screen.row_of(f"> {typed}"), screen.row_of(reason)
    assert input_row >= 0 and reason_row == input_row + 1, "\n".join(screen.lines())
