"""What a measurement is given (`Config`) and hands back (`Result`, made of table `Row`s).

Each `bench.m_*` module has a `measure(stack, config) -> Result`; the rows make the results
table, and everything else goes into the JSON file that `dump_json` writes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


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
