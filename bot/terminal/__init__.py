"""The terminal host: `parley run` asks its questions here, one control per item type."""

from bot.terminal.host import TerminalHost
from bot.terminal.prompts import TerminalPrompter, parse_choices

__all__ = ["TerminalHost", "TerminalPrompter", "parse_choices"]
