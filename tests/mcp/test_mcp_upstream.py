"""The test upstream (`mcp_upstream.py`) does what the gateway's tests rely on: it writes and reads real
files, and its `ask_person` sends `elicitation/create` in form mode and returns the answer it got."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from gateway_support import UPSTREAM
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ElicitRequestParams, ElicitResult

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026-07-28 (input required), and 2025-11-25
def test_the_upstream_writes_reads_and_elicits_in_form_mode(tmp_path: Path, mode: Literal["auto", "legacy"]) -> None:
    asked: list[Any] = []

    async def person(context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"environment": "staging", "replicas": 3, "confirm": True})

    async def scenario() -> tuple[Any, Any, Any]:
        params = StdioServerParameters(command=sys.executable, args=[str(UPSTREAM), str(tmp_path)])
        async with Client(params, elicitation_callback=person, mode=mode) as client:
            wrote = await client.call_tool("write_file", {"path": "a/b.txt", "text": "hello", "token": "t"})
            read = await client.call_tool("read_file", {"path": "a/b.txt"})
            elicited = await client.call_tool("ask_person", {})
            return wrote, read, elicited

    wrote, read, elicited = anyio.run(scenario)
    assert not wrote.is_error and (tmp_path / "a/b.txt").read_text() == "hello"
    assert (tmp_path / ".writes").read_text() == "a/b.txt\tt\n"
    assert read.structured_content == {"result": "hello"}
    [request] = asked
    assert request.mode in (None, "form") and request.message == "Where should this be deployed?"
    assert set(request.requested_schema["properties"]) == {"environment", "replicas", "confirm"}
    assert json.loads(elicited.content[0].text) == {  # type: ignore[union-attr]
        "action": "accept",
        "content": {"environment": "staging", "replicas": 3, "confirm": True},
    }
