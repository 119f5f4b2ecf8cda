"""Upstream tool names with characters outside ASCII, flagged where people and clients see them.

Rules match names regardless of case or compatibility forms (`bot.mcp.rules.folded`). But a
look-alike letter still slips past a `delete_*` glob. An example is a Cyrillic e, U+0435, in
`delete_file`. Such a name is logged as a warning with its upstream. Its tool is listed with a
note leading its description. Clients show that to people and models.
"""

from __future__ import annotations

import mcp_types as types

from workers.logs import Log

log = Log("parley.mcp.gateway")


def note(name: str) -> str:
    return (
        f"[Parley: this tool's name, {name!a}, has characters outside ASCII; "
        "it may imitate another tool's name, and rules written in ASCII may not match it.]"
    )


def flagged(upstream: str, tool: types.Tool) -> types.Tool:
    """`tool` as listed: unchanged when its name is ASCII, else noted and logged.

    The note goes in its description.
    """
    if tool.name.isascii():
        return tool
    log.warning("upstream lists a tool named outside ASCII", upstream=upstream, tool=ascii(tool.name))
    described = f"{note(tool.name)} {tool.description}" if tool.description else note(tool.name)
    return tool.model_copy(update={"description": described})
