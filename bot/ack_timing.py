"""Timing the answer path's ack: a bolt middleware around the listeners of an answer.

With `process_before_response=True` the listener (decode, validate, accept, enqueue, `ack()`)
runs inside `next()`, and bolt responds as soon as it returns; so the time `next()` takes is
the time from bolt dispatching the verified request to its ack. Signature checking and the
HTTP server's parsing come before and are not in it. A middleware rather than code in the
listeners: one place for the three surfaces, over HTTP and Socket Mode alike.
"""

from __future__ import annotations

import re
import time
from typing import Any

from slack_bolt import BoltResponse

from bot.slack import blocks
from workers import metrics

SURFACES = ("submit", "choice", "form")
_CHOOSE = re.compile(rf"^{blocks.CHOOSE_ACTION_PREFIX}\d+$")
for _surface in SURFACES:
    metrics.SUBMIT_ACK.labels(surface=_surface)


def surface_of(body: Any) -> str | None:
    """Which answer surface a request is (`SURFACES`), or None for anything else."""
    if not isinstance(body, dict):
        return None
    if body.get("type") == "view_submission":
        view = body.get("view")
        return "form" if isinstance(view, dict) and view.get("callback_id") == blocks.FORM_CALLBACK_ID else None
    if body.get("type") != "block_actions":
        return None
    actions = body.get("actions")
    action = actions[0] if isinstance(actions, list) and actions and isinstance(actions[0], dict) else {}
    action_id = str(action.get("action_id", ""))
    if action_id == blocks.SUBMIT_ACTION_ID:
        return "submit"
    return "choice" if _CHOOSE.match(action_id) else None


def time_answers(body: Any, next: Any) -> BoltResponse | None:
    """Observe `parley_submit_ack_seconds{surface}` for an answer; pass anything else through."""
    surface = surface_of(body)
    if surface is None:
        return next()
    start = time.perf_counter()
    try:
        return next()
    finally:
        metrics.SUBMIT_ACK.labels(surface=surface).observe(time.perf_counter() - start)
