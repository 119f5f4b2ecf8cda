"""Every schema Parley's MCP tools publish compiles under ajv's strict mode, as JavaScript clients run it.

The MCP TypeScript SDK (so the Inspector and many hosts) compiles each tool's `outputSchema`
with ajv; in strict mode a `required` name not defined beside it ("required property
"updatedInput" is not defined at "#/oneOf/0"") is an error, and the client cannot use the tool.
The real ajv and ajv-formats from npm (`.ci/run` installs them into `.ci-node/`) compile every
input and output schema `parley mcp` lists, the permission prompt's answer schema, and every
schema the gateway lists for its upstream, in ajv's default draft and in draft 2020-12.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_code_real import NODE_TOOLS, node_tool
from mcp_upstream import __file__ as UPSTREAM

from bot.mcp.gateway.upstreams import Upstreams
from bot.mcp.permission import ANSWER_SCHEMA
from bot.mcp.rules import parse_config
from bot.mcp.server import TOOLS

pytestmark = pytest.mark.system

CHECK = r"""
const path = require("path");
const modules = process.argv[1];
const Ajv = require(path.join(modules, "ajv")).default;
const Ajv2020 = require(path.join(modules, "ajv/dist/2020")).default;
const addFormats = require(path.join(modules, "ajv-formats")).default;
const schemas = JSON.parse(require("fs").readFileSync(0, "utf8"));
const problems = {};
for (const [draft, Make] of [["default", Ajv], ["2020-12", Ajv2020]]) {
  for (const [name, schema] of Object.entries(schemas)) {
    const ajv = new Make({strict: true, allErrors: true});
    addFormats(ajv);
    try { ajv.compile(schema); } catch (e) { problems[`${name} (${draft})`] = e.message; }
  }
}
process.stdout.write(JSON.stringify(problems));
"""


def strict_problems(schemas: dict[str, Any]) -> dict[str, str]:
    """What ajv's strict mode says of each schema that does not compile; empty when all do."""
    modules = NODE_TOOLS / "node_modules"
    node = node_tool("Node.js", Path(shutil.which("node") or "node"))
    node_tool("ajv", modules / "ajv" / "package.json")
    node_tool("ajv-formats", modules / "ajv-formats" / "package.json")
    done = subprocess.run(
        [str(node), "-e", CHECK, str(modules)], input=json.dumps(schemas), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def server_schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = {"approve_tool_use answer": ANSWER_SCHEMA}
    for tool in TOOLS:
        schemas[f"{tool.name} input"] = tool.input_schema
        if tool.output_schema is not None:
            schemas[f"{tool.name} output"] = tool.output_schema
    return schemas


def test_ajv_strict_mode_catches_a_required_name_not_defined_beside_it() -> None:
    """The check can fail: the shape that broke the permission prompt's schema is refused."""
    broken = {
        "type": "object",
        "properties": {"behavior": {"type": "string"}, "updatedInput": {"type": "object"}},
        "oneOf": [{"properties": {"behavior": {"const": "allow"}}, "required": ["updatedInput"]}],
    }
    problems = strict_problems({"broken": broken})
    assert 'required property "updatedInput" is not defined' in problems["broken (default)"]


def test_every_schema_parley_mcp_publishes_compiles_in_strict_mode() -> None:
    schemas = server_schemas()
    assert {"ask_human output", "get_answer output", "request_approval output", "approve_tool_use input"} <= set(
        schemas
    )
    assert strict_problems(schemas) == {}


def test_every_schema_the_gateway_lists_compiles_in_strict_mode(tmp_path: Path) -> None:
    command = json.dumps([sys.executable, UPSTREAM, str(tmp_path)])
    config = parse_config(f"upstreams:\n  files: {{command: {command}}}\nrules: []\n", {})

    async def listed() -> dict[str, Any]:
        async with Upstreams(config) as upstreams:
            tools = upstreams.listed()
        schemas: dict[str, Any] = {}
        for tool in tools:
            schemas[f"{tool.name} input"] = tool.input_schema
            if tool.output_schema is not None:
                schemas[f"{tool.name} output"] = tool.output_schema
        return schemas

    schemas = anyio.run(listed)
    assert "files.write_file input" in schemas
    assert strict_problems(schemas) == {}
