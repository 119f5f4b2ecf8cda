"""A question's message blocks, built once per distinct question and reused for every interrupt that asks it.

An agent asks the same questions again and again, run after run, and building a question's
Block Kit (slack_sdk's model objects, their validators, the text budget, the message-wide
limit checks) was about half a millisecond of a worker's cycle. Only the interrupt id differs
between two asks of the same question: it is in the block ids and in the Submit and form
buttons' values. So the blocks are built for a placeholder id of the interrupt id's length,
kept as JSON, and each ask gets that JSON with its own id put in.

A question is reused only where that is provably the same as building it:
- the template is built twice, with two placeholders; it is kept only if the two builds
  differ exactly where one placeholder stands for the other, so the id reaches nothing but
  id strings, and no text of the question contains a placeholder;
- the placeholder has the interrupt id's length and alphabet, so every limit slack_sdk and
  `bot.slack.limits` checked on it holds for the real id;
- questions shown with facts, changes or notes are built each time (they are rare, and
  their content is the run's own).

Why not `functools.lru_cache`: the key is the request's JSON, not the request, and the value
is built from the request; a small guarded map says that more plainly.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from bot.slack.blocks_question import check_ids, question_blocks
from workers.interaction import Context, ContextChange
from workers.interaction.models import Request

KEPT = 256
_PLACEHOLDER_A = "Q9z_"
_PLACEHOLDER_B = "j2K-"
_NOT_REUSABLE = ""  # kept for a question whose builds do not differ by the id alone


class QuestionTemplates:
    """Question blocks by (request, version, assignees, length of the id), the least recently used dropped first."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._json: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._json)

    def holds(self, request: Request, iid: str, *, assignees: list[str], version: int = 1) -> bool:
        """Whether the next ask of this question would reuse a template."""
        with self._lock:
            return bool(self._json.get(self._key(request, iid, assignees, version)))

    @staticmethod
    def _key(request: Request, iid: str, assignees: list[str], version: int) -> tuple[Any, ...]:
        return (request.model_dump_json(), version, tuple(assignees), len(iid))

    def blocks(
        self,
        request: Request,
        iid: str,
        *,
        assignees: list[str],
        version: int = 1,
        context: Context | None = None,
        changes: Sequence[ContextChange] = (),
    ) -> list[dict[str, Any]]:
        """What `question_blocks` returns for these arguments, a fresh copy each call."""
        if context is not None or changes:
            return question_blocks(request, iid, version=version, assignees=assignees, context=context, changes=changes)
        check_ids(iid, version)  # the builds below see only placeholders
        key = self._key(request, iid, assignees, version)
        with self._lock:
            template = self._json.get(key)
            if template is not None:
                self._json.move_to_end(key)
        if template is None:
            template = self._build(request, iid, assignees, version)
            with self._lock:
                self._json[key] = template
                while len(self._json) > self._kept:
                    self._json.popitem(last=False)
        if template == _NOT_REUSABLE:
            return question_blocks(request, iid, version=version, assignees=assignees)
        out: list[dict[str, Any]] = json.loads(template.replace(_placeholder(_PLACEHOLDER_A, len(iid)), iid))
        return out

    @staticmethod
    def _build(request: Request, iid: str, assignees: list[str], version: int) -> str:
        """The blocks' JSON for placeholder A, or `_NOT_REUSABLE`. Raises what `question_blocks` raises."""
        a, b = _placeholder(_PLACEHOLDER_A, len(iid)), _placeholder(_PLACEHOLDER_B, len(iid))
        with_a = json.dumps(question_blocks(request, a, version=version, assignees=assignees))
        with_b = json.dumps(question_blocks(request, b, version=version, assignees=assignees))
        if a in with_b or with_a.replace(a, b) != with_b:
            return _NOT_REUSABLE
        return with_a


def _placeholder(pattern: str, n: int) -> str:
    """`pattern` repeated to `n` characters: a valid interrupt id (`[A-Za-z0-9_-]`) of that length."""
    return (pattern * (n // len(pattern) + 1))[:n]
