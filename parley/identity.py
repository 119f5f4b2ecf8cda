"""Who acts from this machine's command line: the OS user, shaped as a Parley user id.

`parley run` starts runs as this user (the questions' default assignee), and the admin
commands record it in a run's history as ``cli:<user>``. Anyone who can reach Redis can
use the CLI, so this names the person for the record; it grants nothing.
"""

from __future__ import annotations

import getpass
import os
import re


def os_user() -> str:
    """The OS user name, with what a Parley user id cannot hold replaced, at most 64 characters."""
    try:
        name = getpass.getuser()
    except (OSError, KeyError):
        name = f"uid{os.getuid()}"
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name)[:64] or "terminal"


def cli_actor() -> str:
    """Who an admin command from this command line acts as, in a run's history."""
    return f"cli:{os_user()}"
