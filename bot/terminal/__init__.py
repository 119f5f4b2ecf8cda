"""The terminal host: `parley run` asks its questions right here, with a control per item type."""

from bot.terminal.host import Aborted, TerminalHost
from bot.terminal.prompts import TerminalPrompter, parse_choices

__all__ = ["Aborted", "TerminalHost", "TerminalPrompter", "parse_choices"]
