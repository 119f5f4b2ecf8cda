"""A question asked from MCP elicitation's form schema, and its outcome as MCP's `ElicitResult`.

`ask_human` with `requested_schema` asks the schema's properties as items
(`workers.interaction.elicitation.items_from_requested_schema`). It keeps the schema's shape in
the question's metadata (`ELICITATION`). So `get_answer`, in any process and at any later time,
returns the outcome as MCP's `ElicitResult` does:

- `accept` with `content` when it is answered. The answers are typed as the schema says.
- `decline` when a person asked declined it in Slack (its "Decline" button). The view says so
  (`declined`), as the question's record does.
- `cancel` when nobody answered. It expired, could not be posted, or was cancelled: by its asker,
  an admin (a token, or the App Home's Cancel) or Parley. `cancelled_by` cannot tell a person
  from a token named like a Slack user id (`WORKFLOW`, `U123ABC`), so it is not read.

`content` is there only with `accept`, as in `ElicitResult`. `elicit_result` serves anything
else that forwards `elicitation/create` to people. Give it the question and the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workers.interaction.elicitation import content_from_answers
from workers.questions.models import ELICITATION, QuestionStatus, QuestionView

__all__ = ["ELICITATION", "elicit_action", "elicit_result"]


def elicit_action(view: QuestionView) -> str | None:
    """`accept`, `decline` or `cancel` for a closed question, None while it waits."""
    if view.status is QuestionStatus.WAITING:
        return None
    if view.status is QuestionStatus.ANSWERED:
        return "accept"
    if view.status is QuestionStatus.CANCELLED and view.declined:
        return "decline"
    return "cancel"


def elicit_result(view: QuestionView, schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The question's outcome as MCP's `ElicitResult` (`{action, content?}`).

    None while it waits.
    """
    action = elicit_action(view)
    if action is None:
        return None
    if action != "accept":
        return {"action": action}
    return {"action": action, "content": content_from_answers(schema, view.answers or {})}
