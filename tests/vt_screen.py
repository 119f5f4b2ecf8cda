"""A minimal VT100 screen for tests: where did a prompt_toolkit render put each line?

It understands what prompt_toolkit's renderer writes (text, CR, LF, backspace,
relative and absolute cursor moves, erases) and ignores the rest (colours, modes).
"""

from __future__ import annotations

import re

CSI = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z@])")


class Screen:
    """A grid of `rows` x `columns` characters with a cursor; `feed` it terminal output."""

    def __init__(self, rows: int, columns: int) -> None:
        self.rows, self.columns = rows, columns
        self.grid = [[" "] * columns for _ in range(rows)]
        self.row = self.col = 0

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            match = CSI.match(text, i)
            if match:
                self._csi(match.group(1), match.group(2))
                i = match.end()
                continue
            ch = text[i]
            i += 1
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self.row = min(self.row + 1, self.rows - 1)
            elif ch == "\x08":
                self.col = max(self.col - 1, 0)
            elif ch == "\x1b":
                i += 1  # a two-character escape (keypad modes): nothing to draw
            elif ch >= " " and self.col < self.columns:
                self.grid[self.row][self.col] = ch
                self.col += 1

    def _csi(self, params: str, final: str) -> None:
        if params.startswith("?"):
            return  # private modes: cursor visibility, bracketed paste, autowrap
        numbers = [int(p) if p else 0 for p in params.split(";")] if params else []
        n = max(numbers[0], 1) if numbers else 1
        if final == "A":
            self.row = max(self.row - n, 0)
        elif final == "B":
            self.row = min(self.row + n, self.rows - 1)
        elif final == "C":
            self.col = min(self.col + n, self.columns - 1)
        elif final == "D":
            self.col = max(self.col - n, 0)
        elif final in "Hf":
            self.row = min(max(numbers[0] if numbers else 1, 1), self.rows) - 1
            self.col = min(max(numbers[1] if len(numbers) > 1 else 1, 1), self.columns) - 1
        elif final == "K":
            self.grid[self.row][self.col :] = [" "] * (self.columns - self.col)
        elif final == "J":
            self.grid[self.row][self.col :] = [" "] * (self.columns - self.col)
            for r in range(self.row + 1, self.rows):
                self.grid[r] = [" "] * self.columns

    def lines(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.grid]

    def row_of(self, text: str) -> int:
        """The first row showing `text`; -1 when none does."""
        return next((n for n, line in enumerate(self.lines()) if text in line), -1)
