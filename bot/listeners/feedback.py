"""Feedback on a streamed answer: a click of 👍 or 👎 under it, recorded once per person.

The buttons are Slack's `feedback_buttons` in a `context_actions` block
(`bot.slack.streamed_answer`). A click arrives as a `block_actions` payload. Its action carries
the clicked button's `value`: `good:<run id>` or `bad:<run id>`. Each person's first click is
kept in the run's history as `feedback`, with the rating. It is counted in
`parley_answer_feedback`. Later clicks by the same person change nothing.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from prometheus_client import Counter
from slack_bolt import Ack, App

from bot.deps import BotDeps
from bot.slack.payload_fields import clicked
from bot.slack.streamed_answer import BAD, FEEDBACK_ACTION_ID, GOOD
from workers.logs import Log

log = Log("parley.feedback")
KEPT_FOR = 90 * 86400
"""How long a person's rating of an answer is remembered as given."""
FEEDBACK = Counter(
    "parley_answer_feedback", "Ratings of streamed answers, once per person and run", ["agent", "rating"]
)


def ack_feedback(ack: Ack) -> None:
    ack()


def on_feedback(body: dict[str, Any], deps: BotDeps) -> None:
    """After the ack: record the person's rating of the run's answer, first time only."""
    rating, _, run_id = str(clicked(body).get("value") or "").partition(":")
    user = str((body.get("user") or {}).get("id") or "")
    runs = deps.runs
    run = runs.find(run_id) if rating in (GOOD, BAD) and run_id else None
    if run is None or not user:
        log.info("feedback on no known answer", user=user, run_id=run_id)
        return
    if not runs.first_delivery(f"feedback:{run.id}:{user}", KEPT_FOR):
        return
    runs.note(run.id, "feedback", user, rating=rating)
    FEEDBACK.labels(agent=run.agent, rating=rating).inc()
    log.info("answer rated", **{**run.log_context(), "user": user}, rating=rating)


def register(app: App, deps: BotDeps) -> None:
    app.action(FEEDBACK_ACTION_ID)(ack=ack_feedback, lazy=[partial(on_feedback, deps=deps)])
