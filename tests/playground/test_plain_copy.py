"""The playground's copier gives true copies: nothing the copy holds is shared with the original."""

from __future__ import annotations

import datetime

import pytest

from bot.playground.plain_copy import plain_copy

pytestmark = pytest.mark.unit


def test_json_shaped_values_are_copied_at_every_level() -> None:
    original = {"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}], "n": 1, "x": None}
    copied = plain_copy(original)
    assert copied == original
    copied["blocks"][0]["text"]["text"] = "changed"
    copied["blocks"].append({})
    assert original["blocks"] == [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]


def test_other_values_are_deep_copied() -> None:
    when = datetime.date(2026, 12, 4)
    original = {"pair": ([1], [2]), "when": when}
    copied = plain_copy(original)
    assert copied == original and copied["pair"] is not original["pair"]
    copied["pair"][0].append(3)
    assert original["pair"] == ([1], [2])
