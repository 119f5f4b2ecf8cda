"""Agents that ask for a secret: loaded in-process by the secret-answer tests, and by a terminal
`parley run` with `PARLEY_AGENTS=secret_agents` (tests on PYTHONPATH).

`s-secret` asks for a deploy token (a secret item), records its digest, then, unless told not
to, asks a go-ahead; at the end it checks that the token `run.ask` returned on this replay (read
back from its sealed copy) and `run.secret` are the one it was first given. Its parameters are
JSON at the start of the run's text: `assignees`, `confirm` (default true), `then` ("fail": fail
after the secret), `expires_in` (of the go-ahead).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from workers import agent
from workers.exceptions import AgentError
from workers.interaction import Item, ItemType, Request


def _params(text: str) -> dict[str, Any]:
    text = text.strip()
    if not text.startswith("{"):
        return {}
    obj, _ = json.JSONDecoder().raw_decode(text)
    return obj


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


TOKEN_LABEL = "Deploy token"
GO_LABEL = "Deploy now?"


@agent("s-secret", description="Asks for a deploy token in secret, then a go-ahead")
def secret_agent(run: Any, text: str) -> str:
    p = _params(text)
    token_request = Request(
        reason="The deploy needs a token",
        items=[Item(id="token", text=TOKEN_LABEL, type=ItemType.SECRET)],
        assignees=p.get("assignees", []),
    )
    token = run.ask(token_request, key="token")["token"]
    digest = run.step("digest", lambda: _digest(token))
    if p.get("then") == "fail":
        raise AgentError("stopped on purpose after the secret")
    go = "-"
    if p.get("confirm", True):
        go_request = Request(
            reason="Go ahead with the deploy?",
            items=[Item(id="go", text=GO_LABEL, type=ItemType.SELECT, options=["Go", "Stop"])],
            assignees=p.get("assignees", []),
            expires_in=p.get("expires_in"),
        )
        go = run.ask(go_request, key="go")["go"]
    whole = _digest(token) == digest and run.secret("token") == token
    return f"token came back whole: {'yes' if whole else 'no'}; {go}"


def _token(run: Any, text: str) -> str:
    """The deploy token, asked as `s-secret` asks it (its `assignees` from the run's text)."""
    request = Request(
        reason="The deploy needs a token",
        items=[Item(id="token", text=TOKEN_LABEL, type=ItemType.SECRET)],
        assignees=_params(text).get("assignees", []),
    )
    return run.ask(request, key="token")["token"]


@agent("s-secret-int", description="Asks for a token in secret, then reads it as a number: the error quotes it")
def secret_int_agent(run: Any, text: str) -> str:
    return str(int(_token(run, text)))  # ValueError: invalid literal for int() with base 10: '<the token>'


@agent("s-secret-echo", description="Asks for a token in secret and returns it in its result")
def secret_echo_agent(run: Any, text: str) -> str:
    return f"the token is {_token(run, text)}"
