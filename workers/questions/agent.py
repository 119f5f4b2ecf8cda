"""The built-in `question` agent: the body of every question asked through the API.

It asks the one request stored with the question (bound to its context, if any) and
returns the answers as JSON. Being a run, the question gets everything an agent's question
gets: posting once, validation, accepting once, expiry, reminders, the inbox and history.
It is unlisted: people cannot start it with `/parley`.
"""

from __future__ import annotations

import json
from typing import Any

from workers.exceptions import AgentError
from workers.registry import agent
from workers.runtime import wiring
from workers.store.questions import QuestionStore

NAME = "question"
KEY = "question"


@agent(NAME, description="A question asked through Parley's HTTP API", listed=False)
def question(run: Any, text: str) -> str:
    record = QuestionStore(wiring.current().redis).get(run.run_id)
    if record is None:
        raise AgentError(f"run {run.run_id} is not a question asked through the API")
    answers = run.ask(record.request, key=KEY, context=record.context)
    return json.dumps(answers)
