"""A question's message blocks, built once per distinct question and reused by every ask of it.

An agent asks the same questions again and again, run after run. Building a question's Block Kit
took about half a millisecond of a worker's cycle. That covers slack_sdk's model objects, their
validators, the text budget and the message-wide limit checks. Between two asks of the same
question only two things differ. One is the interrupt id, in the block ids and the Submit and
form buttons' values. The other is the "Asked of …" line, often the run's starter. So the blocks
are built with a same-length placeholder for each, and kept as JSON. Each ask gets that JSON
with its own id and line put in.

A template is reused only where that provably equals a fresh build:
- It is built twice, with two sets of placeholders. It is kept only if the builds differ exactly
  where one placeholder replaces the other. So the id and line reach nothing else, and no
  question text contains a placeholder.
- Each placeholder has its value's length, and the id's alphabet. So the text budget decides the
  same. Every limit slack_sdk and `bot.slack.limits` checked holds for the real values.
- Questions shown with facts or changes are built each time. They are rare, and their content is
  the run's own.

A host keeps the last `KEPT` distinct questions, each the JSON of one message. That is at most
about 15 KB for the largest possible question, 3-4 KB for a usual one.

Why not `functools.lru_cache`? The key is made from the request's JSON and the lengths, not the
arguments. And the value is built from the request. A small guarded map says that more plainly.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from bot.slack.blocks_question import assignee_line, check_ids, question_blocks
from workers.interaction import Context, ContextChange
from workers.interaction.models import Request

KEPT = 256
_SHOWN = {"reason", "items", "claim"}  # the fields of a request that `question_blocks` reads
_NOT_REUSABLE = ""  # kept for a question whose builds differ by more than the placeholders


class QuestionTemplates:
    """Question blocks by request, version and id and line lengths, least recently used first out."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._json: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._json)

    def holds(
        self,
        request: Request,
        iid: str,
        *,
        assignees: list[str],
        version: int = 1,
        asked_by: str | None = None,
        declinable: bool = False,
    ) -> bool:
        """Whether the next ask of this question would reuse a template."""
        with self._lock:
            return bool(self._json.get(_key(request, iid, assignee_line(assignees), version, asked_by, declinable)))

    def blocks(
        self,
        request: Request,
        iid: str,
        *,
        assignees: list[str],
        version: int = 1,
        context: Context | None = None,
        changes: Sequence[ContextChange] = (),
        asked_by: str | None = None,
        declinable: bool = False,
    ) -> list[dict[str, Any]]:
        """What `question_blocks` returns for these arguments, a fresh copy each call."""
        shown: dict[str, Any] = {
            "version": version,
            "assignees": assignees,
            "asked_by": asked_by,
            "declinable": declinable,
        }
        if context is not None or changes:
            return question_blocks(request, iid, context=context, changes=changes, **shown)
        check_ids(iid, version)  # the builds below see only placeholders
        line = assignee_line(assignees)
        key = _key(request, iid, line, version, asked_by, declinable)
        with self._lock:
            template = self._json.get(key)
            if template is not None:
                self._json.move_to_end(key)
        if template is None:
            template = _build(request, len(iid), len(line), version, asked_by, declinable)
            with self._lock:
                self._json[key] = template
                while len(self._json) > self._kept:
                    self._json.popitem(last=False)
        if template == _NOT_REUSABLE:
            return question_blocks(request, iid, **shown)
        out: list[dict[str, Any]] = json.loads(_fill(template, _placeholders("A", len(iid), len(line)), iid, line))
        return out


def _key(
    request: Request, iid: str, line: str, version: int, asked_by: str | None, declinable: bool
) -> tuple[Any, ...]:
    """What the message is built from: reason, items, API asker, and whether declinable.

    It excludes who is asked and when it expires, which are a run's own. Those would make every
    run's question its own template.
    """
    return (request.model_dump_json(include=_SHOWN), version, len(iid), len(line), asked_by, declinable)


def _build(
    request: Request, id_length: int, line_length: int, version: int, asked_by: str | None, declinable: bool
) -> str:
    """The blocks' JSON with placeholders A, or `_NOT_REUSABLE`. Raises what `question_blocks` raises."""
    a, b = _placeholders("A", id_length, line_length), _placeholders("B", id_length, line_length)
    common: dict[str, Any] = {"version": version, "assignees": [], "asked_by": asked_by, "declinable": declinable}
    with_a = json.dumps(question_blocks(request, a[0], asked_line=a[1], **common))
    with_b = json.dumps(question_blocks(request, b[0], asked_line=b[1], **common))
    if _fill(with_a, a, b[0], b[1]) != with_b:
        return _NOT_REUSABLE
    return with_a


def _placeholders(which: str, id_length: int, line_length: int) -> tuple[str, str]:
    """A placeholder id, valid as an interrupt id of that length, and a placeholder line.

    Both use only letters, digits, `_` and `-`. JSON writes those as they are, and they mean nothing
    in mrkdwn.
    """
    id_pattern, line_pattern = ("Q9z_", "Xw7k") if which == "A" else ("j2K-", "Pm4v")
    return _repeat(id_pattern, id_length), _repeat(line_pattern, line_length)


def _repeat(pattern: str, n: int) -> str:
    return (pattern * (n // len(pattern) + 1))[:n]


def _fill(template: str, placeholders: tuple[str, str], iid: str, line: str) -> str:
    """`template` with placeholder id and line replaced in one pass, the line JSON-written."""
    pid, pline = placeholders
    values = {pid: iid, pline: json.dumps(line)[1:-1]}
    return re.sub(
        "|".join(re.escape(p) for p in sorted(values, key=len, reverse=True)), lambda m: values[m[0]], template
    )
