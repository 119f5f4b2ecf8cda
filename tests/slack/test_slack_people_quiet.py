"""`PARLEY_NOTIFY_ASSIGNEES=0`: the people asked get no DM; the question is in its thread as ever.

A stack of its own (the setting is read when `parley serve` and `parley worker` start).
"""

from __future__ import annotations

import json
import secrets

import pytest
from slack_stack import SlackStack

pytestmark = [pytest.mark.system, pytest.mark.stack(workers=1, extra_env={"PARLEY_NOTIFY_ASSIGNEES": "0"})]


def test_no_dm_to_the_people_asked_when_switched_off(stack: SlackStack) -> None:
    mark = stack.mark()
    run = stack.start_run("s-form", f"{json.dumps({'assignees': ['U0CAROL']})} {secrets.token_hex(4)}")
    question = stack.question(run)
    resp, _ = stack.submit(run, question, {"Colour": "Green"}, user="U0CAROL")
    assert resp.status_code == 200
    stack.wait_reply(run, lambda m: m["text"].startswith(":white_check_mark:"), "the run to finish")
    stack.settle()
    assert stack.calls("conversations.open", since=mark) == []
    assert stack.calls("chat.postMessage", lambda c: c["args"].get("channel") == "D0CAROL", since=mark) == []
