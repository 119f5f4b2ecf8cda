"""A model asks for a secret with `ask_user`: it reads a placeholder, the agent's tool gets the value.

The model loop on real Redis and RQ against the loopback chat-completions stand-in: every
request the model received is searched for the secret, and the tool that needs it reads it
from the run (`run.secret`).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from llm_standin import ChatStandin, call, calls, final, last_tool_result
from redis import Redis
from runtime_helpers import make_runtime, parked, work
from secret_support import keys_holding

from workers import agent
from workers.interaction import Answer
from workers.interaction.tools import SECRET_PLACEHOLDER
from workers.llm import Tool, llm_config_from_env, run_loop
from workers.llm.loop import ANSWERS_ARE_DATA
from workers.runtime.acceptance import accept
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

LOGINS: list[str] = []


@agent("s-llm-secret")
def _llm_secret(run: Any, text: str) -> str:
    def log_in(code_id: str) -> str:
        LOGINS.append(run.secret(code_id))  # the agent's own code reads the value from the run
        return "logged in"

    login = Tool(
        name="log_in",
        description="Log in with the one-time code the person gave, named by its question id.",
        parameters={
            "type": "object",
            "properties": {"code_id": {"type": "string"}},
            "required": ["code_id"],
            "additionalProperties": False,
        },
        fn=log_in,
    )
    return run_loop(run, llm_config_from_env(), system="Log in.", user_text=text, tools=[login])


ASK_CODE = {"questions": [{"id": "code", "header": "Code", "question": "Your one-time code?", "type": "secret"}]}


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatStandin]:
    with ChatStandin() as standin:
        monkeypatch.setenv("PARLEY_LLM_BASE_URL", standin.base_url)
        monkeypatch.setenv("PARLEY_LLM_MODEL", "standin-1")
        yield standin
    assert standin.problems == []


def test_the_model_reads_a_placeholder_and_the_tool_gets_the_secret(llm: ChatStandin, r: Redis, tmp_path: Path) -> None:
    secret = f"otp-{secrets.token_hex(10)}"
    llm.add(
        calls(call("ask_user", ASK_CODE, "c1")),
        calls(call("log_in", {"code_id": "code"}, "c2")),
        final("Logged in."),
    )
    rt = make_runtime(r, tmp_path, secret_key=Fernet.generate_key().decode())
    run_id, iid = parked(rt, "s-llm-secret", "log me in")
    schema = llm.requests[0]["tools"][0]["function"]["parameters"]
    assert "secret" in schema["properties"]["questions"]["items"]["properties"]["type"]["enum"]
    accept(rt, iid, "U1", [Answer(id="code", secret=secret)])
    LOGINS.clear()
    work(rt)
    run = rt.store.get(run_id)
    assert (run.status, run.result) == (RunStatus.SUCCEEDED, "Logged in.")
    assert [secret] == LOGINS
    assert last_tool_result(llm.requests[1]) == f"{ANSWERS_ARE_DATA}\ncode: {SECRET_PLACEHOLDER}"
    assert len(llm.requests) == 3 and secret not in json.dumps(llm.requests)
    assert keys_holding(r, secret) == []
