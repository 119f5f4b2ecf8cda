"""The MCP surfaces (`bot/mcp/`) reach Parley through its services, never the store or the runtime.

They import the port (`workers.interaction`), the question service (`workers.questions`),
`workers.exceptions`, `workers.logs` and `workers.metrics`; the composition roots under
`parley/` build the store and hand it in.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_layers import ROOT, files, imports

pytestmark = pytest.mark.unit
BELOW_THE_SERVICES = ("workers.store", "workers.runtime")


def below_the_services(path: Path) -> set[str]:
    return {m for m in imports(path) if m.startswith(BELOW_THE_SERVICES)}


@pytest.mark.parametrize("path", files("bot/mcp"), ids=lambda p: str(p.relative_to(ROOT)))
def test_mcp_modules_import_neither_the_store_nor_the_runtime(path: Path) -> None:
    bad = below_the_services(path)
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_mcp_rule_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "gateway.py"
    bad.write_text(
        "from workers.questions import QuestionService\n"
        "from workers.store.gateway import GatewayStore\n"
        "def f():\n"
        "    from workers.runtime.arg_schema import problems\n"
    )
    assert below_the_services(bad) == {"workers.store.gateway", "workers.runtime.arg_schema"}
