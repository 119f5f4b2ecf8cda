"""An upstream MCP server that checks Parley's receipt before it acts: `python tests/receipt_upstream.py DIR KEYS`.

Its one tool, `deploy`, reads the call's `_meta`, checks with `workers.receipts.upstream.check_call`
and the public keys in KEYS (PEM) that a person approved exactly these arguments, and refuses the
call otherwise. Each call's verdict and `_meta` are appended to DIR/.verdicts as a JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's Parley, as the test runs it

from workers.receipts import KeyRing, ReceiptError
from workers.receipts.upstream import check_call

VERDICTS = ".verdicts"


def build(root: Path, keys: Path) -> MCPServer:
    server = MCPServer("deploys-for-tests", instructions="Deploys, each only with a person's signed approval.")
    ring = KeyRing.from_files([keys])

    @server.tool(description="Deploy a service with a number of replicas.")
    def deploy(ctx: Context, service: str, replicas: int) -> str:
        meta: dict[str, Any] = dict(ctx.request_context.meta or {})
        arguments = {"service": service, "replicas": replicas}
        try:
            check_call(meta, arguments, ring, tool="deploy", max_age=300)
            verdict = "ok"
        except ReceiptError as exc:
            verdict = f"refused: {exc}"
        with (root / VERDICTS).open("a", encoding="utf-8") as log:
            log.write(json.dumps({"verdict": verdict, "arguments": arguments, "meta": meta}) + "\n")
        if verdict != "ok":
            raise ToolError(verdict)
        return f"deployed {service} with {replicas} replicas"

    return server


if __name__ == "__main__":
    build(Path(sys.argv[1]), Path(sys.argv[2])).run("stdio")
