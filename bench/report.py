"""The results: a table (stdout and Markdown), the JSON of everything measured, and one plot."""

from __future__ import annotations

import importlib.util
import math
import shutil
import sys
from pathlib import Path
from typing import Any

from bench.measurement import Row, dump_json

HEADER = ("Measurement", "Case", "Metric", "Parley", "Baseline", "Ratio", "Target", "Met", "Spread (rounds)", "Note")


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}"


def _cells(row: Row) -> list[str]:
    met = "" if row.met is None else ("yes" if row.met else "NO")
    q = "-" if row.ratio is None else f"{row.ratio:.2f}x"
    return [
        row.measure,
        row.case,
        row.metric,
        _num(row.parley),
        _num(row.baseline),
        q,
        row.target,
        met,
        row.spread,
        row.note,
    ]


def text_table(rows: list[Row]) -> str:
    cells = [list(HEADER)] + [_cells(r) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    widths[-1] = min(widths[-1], 60)
    lines = []
    for n, c in enumerate(cells):
        lines.append("  ".join(c[i][: widths[i]].ljust(widths[i]) for i in range(len(HEADER))).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(rows: list[Row]) -> str:
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |")
    return "\n".join(out)


def markdown(rows: list[Row], meta: dict[str, Any]) -> str:
    head = (
        f"# Parley bench: {meta['mode']} run\n\n`{meta['command']}` on {meta['when']} "
        f"({meta['cpus']} CPUs, Python {meta['python']}, Redis {meta['redis']}, RQ {meta['rq']}, "
        f"bolt {meta['bolt']}, commit {meta['commit']}); took {meta['seconds']:.0f} s.\n\n"
        "Parley and its baseline run alternately in the same run; Ratio = Parley / Baseline. "
        "Spread is the range of the per-round medians (Parley | baseline).\n\n"
    )
    return head + markdown_table(rows) + "\n"


def plot(path: Path, rows: list[Row], detail: dict[str, Any], title: str) -> None:
    """Seven panels, one per measurement, Parley beside its baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {}
    for r in rows:
        by.setdefault(r.measure, []).append(r)
    fig, axes = plt.subplots(2, 4, figsize=(20, 9))
    fig.suptitle(title, fontsize=12)
    panels = [
        ("1 ack path", "p99 ms", "Ack path p99 (ms)", True),
        ("2 resume", "p50 ms", "Resume latency p50 (ms)", False),
        ("3 question", "p50 ms", "Question latency p50 (ms)", False),
        ("4 full cycle", "runs/s vs jobs/s", "Full cycle: runs/s vs raw jobs/s", False),
        ("5 footprint", None, "Bytes per paused run (baseline: request JSON)", False),
        ("6 inbox scale", None, "Inbox p50 (ms) by paused runs", False),
        ("7 worker class", "enqueue->start p50 ms", "Enqueue to start p50 (ms)", True),
        ("7 worker class", "jobs/s", "Jobs/s by worker class", True),
    ]
    for ax, (measure, metric, label, logy) in zip(axes.flat, panels, strict=True):
        sel = [r for r in by.get(measure, []) if metric is None or r.metric == metric]
        ax.set_title(label, fontsize=10)
        if not sel:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
            continue
        if measure == "6 inbox scale":
            for name in sorted({r.case.split(" @ ")[0] for r in sel}):
                pts = [(int(r.case.split(" @ ")[1].replace(",", "")), r.parley) for r in sel if r.case.startswith(name)]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            ax.set_xscale("log")
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=8)
            continue
        xs = range(len(sel))
        p = [r.parley if not math.isnan(r.parley) else 0 for r in sel]
        b = [r.baseline or 0 for r in sel]
        ax.bar([x - 0.2 for x in xs], p, 0.4, label="Parley")
        ax.bar([x + 0.2 for x in xs], b, 0.4, label="baseline")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r.case for r in sel], rotation=20, fontsize=7, ha="right")
        for x, r in zip(xs, sel, strict=True):
            if r.ratio is not None:
                ax.annotate(f"{r.ratio:.2f}x", (x, max(p[x], b[x])), ha="center", va="bottom", fontsize=7)
            elif math.isnan(r.parley):
                ax.annotate("Parley: fails", (x, b[x]), ha="center", va="bottom", fontsize=7, color="red")
        if measure == "5 footprint":
            ax.axhline(3072, color="red", linestyle="--", linewidth=1, label="3 KB budget (beyond JSON)")
            ax.set_ylim(0, max(max(p), 3072) * 1.35)
        if logy:
            ax.set_yscale("log")
        ax.legend(fontsize=8, loc="upper left", ncol=3 if measure == "5 footprint" else 1)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def can_plot() -> bool:
    """Whether matplotlib, which draws the plot, is installed."""
    return importlib.util.find_spec("matplotlib") is not None


def write_results(
    out: Path, rows: list[Row], details: dict[str, Any], meta: dict[str, Any], *, copy_as: str | None
) -> list[Path]:
    """Write `latest.{json,md,png}` into `out`, and a copy named `copy_as` (`quick`, `full`) when given.

    `out` is the only directory written: `--out` keeps a run away from the tracked results.
    Without matplotlib (the `dev` extra) the plot is skipped, saying so in one line.
    Returns the files written.
    """
    out.mkdir(parents=True, exist_ok=True)
    latest = [out / f"latest.{ext}" for ext in ("json", "md", "png")]
    dump_json(latest[0], {"meta": meta, "rows": [r.as_dict() for r in rows], "detail": details})
    latest[1].write_text(markdown(rows, meta))
    if can_plot():
        plot(latest[2], rows, details, f"Parley vs. its baselines ({meta['mode']}, {meta['when']})")
    else:
        print("no plot: matplotlib is not installed (pip install -e '.[dev]')", file=sys.stderr)
        latest = latest[:2]
    if copy_as is None:
        return latest
    copies = [path.with_name(f"{copy_as}{path.suffix}") for path in latest]
    for source, copy in zip(latest, copies, strict=True):
        shutil.copyfile(source, copy)
    return latest + copies


def rerender(json_path: Path) -> None:
    """Write the Markdown table and the plot again from a results JSON (e.g. after changing the plot)."""
    import json

    data = json.loads(json_path.read_text())
    rows = [Row(**r) for r in data["rows"]]
    meta = data["meta"]
    json_path.with_suffix(".md").write_text(markdown(rows, meta))
    title = f"Parley vs. its baselines ({meta['mode']}, {meta['when']})"
    plot(json_path.with_suffix(".png"), rows, data["detail"], title)


if __name__ == "__main__":
    import sys

    for arg in sys.argv[1:]:
        rerender(Path(arg))
