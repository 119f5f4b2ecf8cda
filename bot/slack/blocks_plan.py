"""The run's live plan as Block Kit: one `plan` block whose `task_card`s are its steps and questions.

The shapes come from https://docs.slack.dev/reference/block-kit/blocks/plan-block/ and
https://docs.slack.dev/reference/block-kit/blocks/task-card-block/. Statuses are `pending`,
`in_progress`, `complete` and `error`. A card's `sources` are URL source elements. Slack
documents no length for a card's title. So Parley keeps each to a header's 150 characters,
counted in UTF-16 units. A plan shows at most `TASKS_SHOWN` cards. Beyond that, the oldest
finished ones are counted in one card. Each version of the message gets a fresh `block_id`, as
Slack asks.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import Block

from bot.slack.mrkdwn import truncate

TITLE_MAX = 150
TASKS_SHOWN = 40
STATUSES = ("pending", "in_progress", "complete", "error")


def _card(task: dict[str, Any]) -> dict[str, Any]:
    card: dict[str, Any] = {
        "type": "task_card",
        "task_id": str(task["id"])[:255],
        "title": truncate(str(task["title"]) or "Step", TITLE_MAX),
        "status": task["status"] if task["status"] in STATUSES else "pending",
    }
    if task.get("link"):
        card["sources"] = [{"type": "url", "url": task["link"], "text": "The question"}]
    return card


def _folded(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most `TASKS_SHOWN` tasks, older finished ones counted in the first card."""
    if len(tasks) <= TASKS_SHOWN:
        return tasks
    extra = len(tasks) - TASKS_SHOWN + 1
    done = [t for t in tasks if t["status"] in ("complete", "error")][:extra]
    if len(done) < extra:
        return tasks[-TASKS_SHOWN:]
    gone = {id(t) for t in done}
    failed = any(t["status"] == "error" for t in done)
    head = {"id": "earlier", "title": f"{len(done)} earlier steps", "status": "error" if failed else "complete"}
    return [head, *(t for t in tasks if id(t) not in gone)]


def done_count(tasks: list[dict[str, Any]]) -> int:
    return sum(1 for t in tasks if t["status"] == "complete")


def plan_title(agent: str, tasks: list[dict[str, Any]]) -> str:
    return truncate(f"{agent}: {done_count(tasks)} of {len(tasks)} done", TITLE_MAX)


def plan_blocks(agent: str, tasks: list[dict[str, Any]], version: int) -> list[dict[str, Any]]:
    """The plan message's one block, checked by slack_sdk's models (`PlanBlock`, `TaskCardBlock`)."""
    block = {
        "type": "plan",
        "block_id": f"parley-plan-{version}",
        "title": plan_title(agent, tasks),
        "tasks": [_card(t) for t in _folded(tasks)],
    }
    parsed = Block.parse(block)
    assert parsed is not None  # slack_sdk knows `plan`; its validators raise on a bad card
    parsed.to_dict()
    return [block]


def plan_text(agent: str, tasks: list[dict[str, Any]]) -> str:
    """The message's fallback text (notifications, and clients that draw no plan)."""
    return f"Plan of {agent}: {done_count(tasks)} of {len(tasks)} steps done."
