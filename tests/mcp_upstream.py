"""An upstream MCP server for the gateway's tests, on the official SDK: `python -m tests.mcp_upstream DIR`
(or `python tests/mcp_upstream.py DIR`) serves it over stdio.

`write_file` really writes under DIR (and appends a line to DIR/.writes, so a test counts how often
it was called), `read_file` reads back, and `ask_person` sends `elicitation/create` in form mode and
returns what it got, for forwarding elicitation to people.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

WRITES = ".writes"


class Deploy(BaseModel):
    """What `ask_person` elicits."""

    environment: str = Field(description="Where to deploy")
    replicas: int = Field(default=2, ge=1, le=10)
    confirm: bool = False


def build(root: Path) -> MCPServer:
    server = MCPServer("files-for-tests", instructions="Files under one directory, for Parley's tests.")

    def under(path: str) -> Path:
        target = (root / path).resolve()
        if root.resolve() not in target.parents:
            raise ValueError(f"{path!r} is outside the directory")
        return target

    destructive = ToolAnnotations(destructive_hint=True)

    @server.tool(description="Write text to a file under the directory.", annotations=destructive)
    def write_file(path: str, text: str, token: str | None = None) -> str:
        target = under(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        with (root / WRITES).open("a", encoding="utf-8") as log:
            log.write(f"{path}\t{token or ''}\n")
        return f"wrote {len(text)} characters to {path}"

    @server.tool(description="Read a file under the directory.", annotations=ToolAnnotations(read_only_hint=True))
    def read_file(path: str) -> str:
        return under(path).read_text(encoding="utf-8")

    @server.tool(description="Ask the person where to deploy (elicitation/create, form mode).")
    async def ask_person(ctx: Context) -> dict[str, object]:
        answer = await ctx.elicit("Where should this be deployed?", schema=Deploy)
        data = answer.data.model_dump() if answer.action == "accept" else None
        return {"action": answer.action, "content": data}

    return server


if __name__ == "__main__":
    build(Path(sys.argv[1])).run("stdio")
