"""`parley runs list|show|cancel|retry|purge`: the admin CLI, through `RunService`."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import textwrap
from typing import Any

from parley.bootstrap import build_runs, connect_redis
from parley.identity import cli_actor
from parley.receipts_cmd import receipt_lines
from parley.settings import Settings
from workers.exceptions import AdminError
from workers.runs import RunService, RunStatus

PER_PAGE = 20


def _when(ts: float | None) -> str:
    """`ts` in local time; "-" for none, "?" for one no datetime can hold."""
    if not ts:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return "?"


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*["-" * w for w in widths])]
    lines += [fmt.format(*[str(x) for x in row]) for row in rows]
    return "\n".join(lines)


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _value(value: Any) -> str:
    """One history value as a person reads it: text as is, else compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _detail(detail: dict[str, Any]) -> str:
    """A history entry's detail on one line: answers first, then `key=value`.

    Answers read `id=value`, and a secret reads `••••`.
    """
    parts: list[str] = []
    answers = detail.get("answers")
    if isinstance(answers, list):
        given = [
            f"{a.get('id')}={_value(next((v for k, v in a.items() if k != 'id'), None))}"
            for a in answers
            if isinstance(a, dict)
        ]
        parts.append(f"answers {', '.join(given) or '(none)'};")
    parts += [f"{k}={_value(v)}" for k, v in detail.items() if k != "answers"]
    return " ".join(parts)


def temporal_workflow(conversation: dict[str, Any]) -> str:
    """`<workflow id> (namespace <ns>)` for a question a Temporal workflow awaits.

    "" for any other run.
    """
    target = conversation.get("temporal")
    if not isinstance(target, dict) or not target.get("workflow_id"):
        return ""
    return f"{target['workflow_id']} (namespace {target.get('namespace', '')})"


def _span(seconds: float) -> str:
    """`older_than` as given: the largest unit of d, h, m, s dividing it.

    Otherwise seconds.
    """
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def purge(runs: RunService, older_than: float, dry_run: bool) -> int:
    """Delete runs finished over `older_than` seconds ago, listing and counting them."""
    ids = runs.purge(older_than, dry_run=dry_run)
    for run_id in ids:
        print(run_id)
    what = "would purge" if dry_run else "purged"
    tail = " (dry run: nothing was deleted)" if dry_run else ""
    print(f"{what} {len(ids)} finished run(s) last updated more than {_span(older_than)} ago{tail}")
    return 0


def runs_command(settings: Settings, args: argparse.Namespace) -> int:
    runs = build_runs(settings, connect_redis(settings))
    cmd = args.runs_command
    if cmd == "list":
        try:
            status = RunStatus(args.status) if args.status else None
        except ValueError:
            raise AdminError(f"--status must be one of: {', '.join(s.value for s in RunStatus)}") from None
        if args.page < 1:
            raise AdminError(f"--page {args.page}: pages are numbered from 1")
        page = runs.list_runs(status, page=args.page - 1, per_page=PER_PAGE)
        rows = [[r.id, r.agent, r.status.value, r.started_by, _when(r.updated_at), _short(r.text)] for r in page.runs]
        print(_table(rows, ["RUN", "AGENT", "STATUS", "STARTED BY", "UPDATED", "TEXT"]) if rows else "no runs")
        counts = runs.counts()
        print("\n" + "  ".join(f"{k}: {v}" for k, v in counts.items() if v))
        if page.has_next:
            print(f"more: parley runs list --page {args.page + 1}" + (f" --status {args.status}" if status else ""))
        return 0
    if cmd == "show":
        detail = runs.show(args.run_id)
        run = detail.run
        print(f"run {run.id}  agent {run.agent}  status {run.status.value}  started by {run.started_by}")
        print(f"text: {run.text}")
        print(f"created {_when(run.created_at)}  updated {_when(run.updated_at)}  failures {run.failures}")
        if run.result:
            print(f"result: {run.result}")
        if run.error:
            print(f"error: {run.error}")
        waiting = temporal_workflow(run.conversation)
        if waiting:
            print(f"temporal workflow: {waiting}")
        if detail.interrupt and run.status is RunStatus.PAUSED:
            q = detail.interrupt
            print(f"\nwaiting on {', '.join(q.assignees)} since {_when(q.asked_at)} (question {q.id})")
            print(textwrap.indent(q.request.reason, "  "))
            for item in q.request.items:
                print(f"  - {item.id} ({item.type.value}{'' if item.required else ', optional'}): {item.text}")
            if q.expires_at:
                print(f"  expires {_when(q.expires_at)}")
        if detail.questions and run.status is RunStatus.PAUSED:  # several at once: each one's progress
            print(f"\nwaiting on {len(detail.questions)} questions at once:")
            for q in detail.questions:
                who = q.answered_by if q.answered_by else ", ".join(q.assignees)
                print(f"  - {q.key}: {q.state.value} ({who})  {_short(q.request.reason, 60)}")
        rows = [[_when(h.at), h.event, h.by, _short(_detail(h.detail), 70)] for h in detail.history]
        print("\n" + _table(rows, ["WHEN", "EVENT", "BY", "DETAIL"]))
        for line in receipt_lines(runs.runtime.receipts, detail.history):  # each closed question's, by digest
            print(line)
        return 0
    if cmd == "purge":
        return purge(runs, args.older_than, args.dry_run)
    if cmd == "cancel":
        # Redis alone: a worker locks the question's message and tells its webhook or Temporal workflow.
        run = runs.cancel(args.run_id, by=cli_actor())
        print(f"run {run.id} is {run.status.value}")
        return 0
    run = runs.retry(args.run_id, by=cli_actor())
    print(f"run {run.id} is {run.status.value}")
    return 0
