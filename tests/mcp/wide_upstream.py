"""An upstream MCP server on the official SDK with one tool of nine arguments: `python wide_upstream.py DIR`.

`file_ticket` appends its arguments to DIR/.tickets as one JSON line, so a test counts its runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

TICKETS = ".tickets"
FIELDS = ["title", "owner", "team", "priority", "component", "version", "region", "summary", "due"]
"""The tool's nine arguments, in its order: one more than an approval can make editable."""


def build(root: Path) -> MCPServer:
    server = MCPServer("wide-for-tests")

    @server.tool(description="File a ticket with nine fields.")
    def file_ticket(
        title: str,
        owner: str,
        team: str,
        priority: str,
        component: str,
        version: str,
        region: str,
        summary: str,
        due: str,
    ) -> str:
        given = {name: value for name, value in locals().items() if name in FIELDS}
        with (root / TICKETS).open("a", encoding="utf-8") as log:
            log.write(json.dumps(given) + "\n")
        return f"filed {title}"

    return server


if __name__ == "__main__":
    build(Path(sys.argv[1])).run("stdio")
