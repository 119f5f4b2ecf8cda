"""What a measurement is given (`Config`) and hands back (`Result`, made of table `Row`s).

Each `bench.m_*` module has a `measure(stack, config) -> Result`; the rows make the results
table, and everything else goes into the JSON file that `dump_json` writes. A module that
needs programs beyond Python and Redis names them in `TOOLS` ({program: how to install it});
without one, the measurement is skipped (`MissingTool`) and the others still report.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SYSTEM_PATH = "/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin"
"""Where Debian's programs are looked for first: the versions a deployment is likelier to run."""


class MissingTool(Exception):
    """A program a measurement needs is not installed; the message says how to install it."""


def find_tool(name: str, install: str) -> str:
    """The path of program `name` (Debian's first, then PATH's), or `MissingTool` saying `install`."""
    found = shutil.which(name, path=SYSTEM_PATH) or shutil.which(name)
    if not found:
        raise MissingTool(f"{name} not found: {install}")
    return found


def missing_tools(tools: Mapping[str, str]) -> list[str]:
    """One line per program of `tools` ({name: how to install it}) that is not installed."""
    missing: list[str] = []
    for name, install in tools.items():
        try:
            find_tool(name, install)
        except MissingTool as exc:
            missing.append(str(exc))
    return missing


@dataclass
class Config:
    """How big a run is: `--quick` (CI, under 3 minutes on 2 cores) or the full run."""

    quick: bool
    rounds: int

    def pick(self, quick: Any, full: Any) -> Any:
        return quick if self.quick else full


@dataclass
class Row:
    """One line of the results table: a Parley figure, its baseline, their ratio and the target."""

    measure: str
    case: str
    metric: str
    parley: float
    baseline: float | None = None
    ratio: float | None = None
    target: str = ""
    met: bool | None = None
    spread: str = ""
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Result:
    """What one measurement hands back: table rows, and everything else for the JSON file."""

    rows: list[Row] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)


def dump_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)
