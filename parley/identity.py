"""Who acts from this machine's command line: the OS user, as a Parley user id.

`parley run` starts runs as this user, the questions' default assignee. The admin commands
record it in a run's history as ``cli:<user>``. Anyone who can reach Redis can use the CLI. So
this names the person for the record, and grants nothing.
"""

from __future__ import annotations

import getpass
import os
import re


def os_user() -> str:
    """The OS user name, at most 64 characters, made a valid Parley user id.

    Characters a Parley user id cannot hold are replaced.
    """
    try:
        name = getpass.getuser()
    except (OSError, KeyError):
        name = f"uid{os.getuid()}"
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name)[:64] or "terminal"


def cli_actor() -> str:
    """Who an admin command from this command line acts as, in history."""
    return f"cli:{os_user()}"
