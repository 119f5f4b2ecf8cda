"""The built-in `question` agent: the body of every question asked through the API.

It asks the one request stored with the question, bound to its context if any. It returns the
answers as JSON. With a quorum it asks each assignee separately (`run.ask_each`). It then
returns each one's answers by user id. Being a run, the question gets all an agent's question
gets. That is posting once, validation, accepting once, expiry, reminders, the inbox and
history. It is unlisted, so people cannot start it with `/parley`.

A secret answer never reaches the run's result, which history, `parley runs show` and Inspect
show. The result has `SECRET_MASK` instead. The value is sealed again for the asking token,
which reads it once (`QuestionService.reveal`). That copy is made before the run ends, while the
run's own sealed copy is still held. So there is no moment without one.
"""

from __future__ import annotations

import json

from workers.agent_run import AgentRun
from workers.exceptions import AgentError
from workers.interaction import SECRET_MASK
from workers.registry import agent
from workers.runtime import wiring
from workers.store.questions import QuestionStore

NAME = "question"
KEY = "question"
SECRETS_KEY = "question:secrets"
"""The step that seals the secret answers for the asker; a replay finds it recorded."""


@agent(NAME, description="A question asked through Parley's HTTP API", listed=False)
def question(run: AgentRun, text: str) -> str:
    runtime = wiring.current()
    store = QuestionStore(runtime.redis)
    record = store.get(run.run_id)
    if record is None:
        raise AgentError(f"run {run.run_id} is not a question asked through the API")
    if record.quorum is not None:  # each person answers for themselves; the result is their answers by user id
        by_person = run.ask_each(record.request, record.quorum, key=KEY, context=record.context)
        return json.dumps(by_person, ensure_ascii=False)
    answers = run.ask(record.request, key=KEY, context=record.context)
    secret = {i.id: v for i in record.request.items if i.is_secret and isinstance(v := answers.get(i.id), str)}
    box = runtime.store.box
    if secret and box is not None:  # run.ask refuses a secret item where there is no key
        retention = runtime.settings.retention
        run.step(SECRETS_KEY, lambda: store.keep_secrets(run.run_id, secret, box, retention))
    return json.dumps({k: SECRET_MASK if k in secret else v for k, v in answers.items()}, ensure_ascii=False)
