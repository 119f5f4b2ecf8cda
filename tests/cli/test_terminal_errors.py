"""Where the terminal's controls show a refused answer: on the row next to the input.

prompt_toolkit fills the screen below the cursor when the terminal reports the
cursor's position, so a message drawn after the input could land on the last row,
far from where the person is typing. These tests render each control into a
screen of known size whose cursor is on its first row, type an answer the control
refuses, and read where the reason was drawn.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output
from vt_screen import Screen

from bot.terminal import TerminalPrompter
from workers.agents.ticket import details_request
from workers.interaction import Item

pytestmark = pytest.mark.unit

ROWS, COLUMNS = 40, 120
CURSOR_AT_TOP = "\x1b[1;1R"  # the terminal's answer to "where is the cursor?"
SHOW_CURSOR = "\x1b[?25h"  # prompt_toolkit ends every frame with it
TICKET = {i.id: i for i in details_request("Login fails").items}


class TtyText(io.StringIO):
    """Captured output that claims to be a terminal, so prompt_toolkit asks where its cursor is."""

    def isatty(self) -> bool:
        return True


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the control never drew what was expected")
        time.sleep(0.02)


def screen_when_refused(item: Item, keys: str, reason: str) -> Screen:
    """The screen as it was when the control first showed `reason` after `keys` were typed."""
    out = TtyText()
    output = Vt100_Output(out, lambda: Size(rows=ROWS, columns=COLUMNS), term="xterm")

    with create_pipe_input() as pipe:

        def person() -> None:
            pipe.send_text(CURSOR_AT_TOP)
            wait_for(lambda: SHOW_CURSOR in out.getvalue()[10:])  # the first frame is drawn
            pipe.send_text(keys)
            wait_for(lambda: reason in out.getvalue())
            pipe.send_text("\x03")

        typist = threading.Thread(target=person, daemon=True)
        typist.start()
        with create_app_session(input=pipe, output=output), pytest.raises(KeyboardInterrupt):
            TerminalPrompter().ask(item)
        typist.join(5)
    text = out.getvalue()
    frame_end = text.index(SHOW_CURSOR, text.index(reason))
    screen = Screen(ROWS, COLUMNS)
    screen.feed(text[:frame_end])
    return screen


@pytest.fixture(autouse=True)
def _cursor_position_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMPT_TOOLKIT_NO_CPR", raising=False)


@pytest.mark.parametrize(
    ("item", "keys", "typed_on", "reason"),
    [
        (TICKET["severity"], "9\r", "type a number or name: 9", "There is no option 9"),
        (TICKET["components"], "\r", "comma separated:", "an answer is required: tick at least one"),
        (TICKET["due"], "2026-13-45\r", "> 2026-13-45", "is not a date in YYYY-MM-DD form"),
        (TICKET["description"], "\x1b\r", "> ", "an answer is required"),
    ],
    ids=["select", "multi-select", "date", "multiline text"],
)
def test_a_refused_answer_is_explained_next_to_the_input(item: Item, keys: str, typed_on: str, reason: str) -> None:
    screen = screen_when_refused(item, keys, reason)
    input_row, reason_row = screen.row_of(typed_on), screen.row_of(reason)
    assert input_row >= 0 and reason_row >= 0, "\n".join(screen.lines())
    assert reason_row == input_row + 1, "\n".join(screen.lines())
