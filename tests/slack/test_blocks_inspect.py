"""The Inspect modal's blocks: what a run shows, paged within a modal's 100 blocks, escaped (no I/O)."""

from __future__ import annotations

import re

import pytest
from blockcheck import assert_valid_view, text_objects

from bot.slack.blocks_inspect import HISTORY_PAGE, inspect_view
from workers.interaction import Item, ItemType, Request
from workers.runtime.admin import RunDetail
from workers.store.records import HistoryEntry, InterruptRecord, InterruptState, RunRecord, RunStatus

pytestmark = pytest.mark.unit

EVIL = "<!channel> <@U123> & <https://evil|click>"
OWN_MARKUP = re.compile(r"<@U[A-Z0-9]+>|<!date\^\d+\^[^|<>]+\|[^<>]+>")
T0 = 1_760_000_000.0


def detail(history_size: int) -> RunDetail:
    run = RunRecord(
        id="rRUN1",
        agent="ticket",
        text=f"Printer {EVIL}",
        started_by="U0BOB",
        status=RunStatus.PAUSED,
        created_at=T0,
        updated_at=T0 + 60,
        interrupt="qQ2",
    )
    request = Request(reason=f"Which printer? {EVIL}", items=[Item(id="p", text="Printer", type=ItemType.FREE_TEXT)])
    question = InterruptRecord(
        id="qQ2",
        run_id=run.id,
        key="printer",
        attempt=2,
        request=request,
        assignees=["U0CAROL", "U0BOB"],
        asked_at=T0 + 30,
        expires_at=T0 + 3630,
        state=InterruptState.OPEN,
    )
    answered = HistoryEntry(
        at=T0 + 20,
        event="answered",
        by="U0CAROL",
        detail={"interrupt_id": "qQ1", "key": "printer", "attempt": 1, "answers": [{"id": "p", "free_text": EVIL}]},
    )
    entries = [HistoryEntry(at=T0, event="started", by="U0BOB", detail={"agent": "ticket"}), answered]
    entries += [HistoryEntry(at=T0 + 40, event="reminded", by="parley", detail={"interrupt_id": "qQ2"})]
    entries += [
        HistoryEntry(at=T0 + 50 + n, event="retry", detail={"error": f"boom {n} {EVIL}"}) for n in range(history_size)
    ]
    steps = {"lookup": {"order": EVIL}, "count": 3}
    return RunDetail(run=run, interrupt=question, history=entries, steps=steps)


def mrkdwn(view: dict) -> str:
    return "\n".join(o["text"] for o in text_objects(view["blocks"]) if o["type"] == "mrkdwn")


def test_the_modal_shows_the_run_its_question_reminders_answers_and_steps() -> None:
    view = inspect_view(detail(3))
    assert_valid_view(view)
    assert view["type"] == "modal" and view["title"]["text"] == "Inspect run"
    assert view["blocks"][0]["text"]["text"] == "ticket · paused"
    text = mrkdwn(view)
    assert "*Started by* <@U0BOB>" in text and "`rRUN1`" in text
    assert "*Waiting for an answer*\nWhich printer? &lt;!channel&gt;" in text
    assert "Asked of <@U0CAROL>, <@U0BOB> · since <!date^1760000030^" in text
    assert "expires <!date^1760003630^" in text
    assert "Reminders sent: <!date^1760000040^{date_short_pretty} at {time}|2025-10-09 08:54 UTC> by Parley" in text
    assert "*printer* (attempt 1), by <@U0CAROL>" in text and "• p: &lt;!channel&gt;" in text
    assert '• `lookup`: {"order": "&lt;!channel&gt;' in text and "• `count`: 3" in text
    assert "*History*, newest first (1 to 6 of 6)" in text
    assert all("<" not in OWN_MARKUP.sub("", t) for t in text.split("\n")), text


def test_a_long_history_is_paged_within_a_modals_blocks() -> None:
    big = detail(300)  # 303 entries: seven pages
    first = inspect_view(big)
    assert_valid_view(first)
    assert len(first["blocks"]) <= 100
    assert f"(1 to {HISTORY_PAGE} of 303)" in mrkdwn(first)
    [nav] = [b for b in first["blocks"] if b.get("block_id") == "inspect|page"]
    assert [(e["text"]["text"], e["value"]) for e in nav["elements"]] == [("Older ▶", "rRUN1|1")]

    last = inspect_view(big, page=6)
    assert_valid_view(last)
    assert "(301 to 303 of 303)" in mrkdwn(last) and "· *started* · <@U0BOB>" in mrkdwn(last)
    [nav] = [b for b in last["blocks"] if b.get("block_id") == "inspect|page"]
    assert [(e["text"]["text"], e["value"]) for e in nav["elements"]] == [("◀ Newer", "rRUN1|5")]
    assert inspect_view(big, page=99) == last  # past the end: the oldest page


def test_a_run_with_more_text_than_a_modal_carries_is_cut_to_the_budget() -> None:
    """Ten long answers, many long steps and a page of long history lines (emoji count 2): within
    10,000 characters and 24 KB of JSON, each part keeping its head."""
    base = detail(60)
    long = "🚀 " + "x" * 400 + " " + EVIL
    answers = [{"id": f"i{n}", "free_text": long} for n in range(10)]
    answered = [
        HistoryEntry(at=T0 + n, event="answered", by="U0CAROL", detail={"key": f"k{n}", "answers": answers})
        for n in range(10)
    ]
    history = [*answered, *(HistoryEntry(at=T0 + 100 + n, event="🚀" * 40, detail={"e": long}) for n in range(60))]
    steps = {f"step-{n}": long for n in range(30)}
    view = inspect_view(RunDetail(run=base.run, interrupt=base.interrupt, history=history, steps=steps))
    assert_valid_view(view)  # the test-side checker holds a modal to the same budget, counted in UTF-16
    text = mrkdwn(view)
    assert "*Answers so far*" in text and "*Steps recorded*" in text and "*History*, newest first" in text
    assert all("<" not in OWN_MARKUP.sub("", t) for t in text.split("\n")), text
