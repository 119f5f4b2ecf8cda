"""Option loads for `external_select`: type-ahead over the request's stored options.

Both the question's message (`q|…` blocks) and its form (`f|…` blocks) load options here. A
select too big for either's budget lists its options as people type. So every option can still
be chosen.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from slack_bolt import Ack, App

from bot.deps import BotDeps
from bot.slack.form_state import parse_block_id

MAX_OPTIONS = 100


def load_options(ack: Ack, body: dict[str, Any], deps: BotDeps) -> None:
    """The stored item's options whose label or value contains the typed text, any case."""
    ref = parse_block_id(str(body.get("block_id", "")))
    interrupt = deps.runs.interrupt(ref[1]) if ref and ref[3] else None
    item = interrupt.request.item(ref[3]) if interrupt and ref and ref[3] else None
    if item is None or not item.options:
        ack(options=[])
        return
    query = str(body.get("value", "")).strip().casefold()
    matches = [o for o in item.options if query in o.label.casefold() or query in o.value.casefold()]
    ack(options=[{"text": {"type": "plain_text", "text": o.label}, "value": o.value} for o in matches[:MAX_OPTIONS]])


def register(app: App, deps: BotDeps) -> None:
    app.options("answer")(partial(load_options, deps=deps))
