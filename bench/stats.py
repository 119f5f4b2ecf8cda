"""Latency statistics for side-by-side comparisons: percentiles, pooled samples, ratios.

Absolute times on shared machines mean little, so every figure the bench reports is a
Parley sample next to its baseline's, taken in alternating rounds; `Dist` keeps each
round's median too, so the report can show how much a figure moved between rounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


def pct(xs: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation; NaN for no samples."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


@dataclass
class Dist:
    """Latency samples (ms) of one side of a comparison, pooled over rounds, with per-round medians."""

    samples: list[float] = field(default_factory=list)
    round_p50: list[float] = field(default_factory=list)
    extra: dict[str, float] = field(default_factory=dict)

    def add_round(self, xs: Iterable[float]) -> None:
        xs = list(xs)
        self.samples += xs
        self.round_p50.append(pct(xs, 50))

    @property
    def p50(self) -> float:
        return pct(self.samples, 50)

    @property
    def p99(self) -> float:
        return pct(self.samples, 99)

    def spread(self) -> str:
        """The range of the per-round medians: how much the figure moved between rounds."""
        if not self.round_p50:
            return ""
        return f"{min(self.round_p50):.2f}-{max(self.round_p50):.2f}"

    def summary(self) -> dict[str, Any]:
        return {
            "n": len(self.samples),
            "p50": round(self.p50, 3),
            "p90": round(pct(self.samples, 90), 3),
            "p99": round(self.p99, 3),
            "max": round(max(self.samples), 3) if self.samples else None,
            "round_p50": [round(x, 3) for x in self.round_p50],
            **{k: round(v, 3) for k, v in self.extra.items()},
        }


def ratio(a: float, b: float | None) -> float | None:
    return None if not b else a / b
